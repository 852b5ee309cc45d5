/* Oscar: the definitions every layer of the runtime shares, and the glossary.
 *
 * Glossary (tests/test_glossary.py checks that every term is used in src/ and that every
 * struct and enum declared in a header of src/ is listed here, under Types)
 *
 * Terms
 *   canonical page    A 4 KiB page of the memfd-backed canonical heap (strict and fast modes).
 *                     It holds the bytes of small objects of one size class (slots) and is
 *                     never handed to the user.
 *   shadow page       A virtual page, mapped (MAP_SHARED) onto one canonical page, through
 *                     which the user reaches exactly one object (K = 1). free() revokes it, so
 *                     any dangling pointer into it faults. Shadow addresses come from a bump
 *                     pointer over the region and are never reused until the region is used
 *                     up (then those of reclaimed region chunks are: heap/reclaim.h).
 *   region            The one PROT_NONE reservation shadow pages and large objects are carved
 *                     from (mem/region.h); a page entry per page.
 *   region chunk      REGION_CHUNK (2 MiB) of the region: the unit the reclaim sweep gives
 *                     back once every object in it is dead.
 *   page entry        8 bytes per region page in a flat table indexed by page number: its
 *                     page kind and what it holds. All metadata is out of band: nothing
 *                     next to user data is trusted.
 *   page kind         What a region page is (enum page_kind, mem/region.h).
 *   span              RUN_PAGES consecutive canonical pages given to one size class.
 *   run               The shadow pages one mmap creates: consecutive canonical pages of a span
 *                     at consecutive shadow addresses, one kernel mapping (VMA).
 *   K                 Objects per shadow page: 1 in strict mode; in fast mode the slots of a
 *                     whole canonical page share one shadow (packed, heap/packed.h), or
 *                     groups of OSCAR_OBJECTS_PER_PAGE.
 *   guard marker      MADV_GUARD_INSTALL (Linux 6.15+): the page faults on every access but
 *                     stays inside its run's kernel mapping, so revoking never splits one.
 *   revoke            Make a freed object's pages fault for good: a guard marker, or PROT_NONE.
 *   deferred revocation  Strict mode near the kernel's mapping limit: a freed object whose
 *                     revocation would split a mapping waits (heap/deferred.h); its slot is
 *                     not reused meanwhile.
 *   retire queue      Fast mode: a thread's pages whose objects are all freed, revoked in a
 *                     batch when it fills.
 *   poison window     Fast mode: a never-mapped range; a freed packed object is filled with
 *                     pointers into it, so a pointer read back from it faults.
 *   large object      More than SMALL_MAX bytes: private anonymous pages of its own in the
 *                     region (strict and fast modes).
 *   slab              256 KiB of private pages a thread maps at once and carves large objects
 *                     of up to 64 KiB from (heap/large.c).
 *   keep              Pages of freed large objects moved (mremap) to the next large objects'
 *                     new addresses instead of being zeroed again (heap/keep.h).
 *   arena, view       The custom-allocator API (include/oscar.h, heap/views.h).
 *   thread cache      Per-thread state of strict and fast modes (heap/thread.h): ready
 *                     shadows per class, the retire queue, counters. Initial-exec TLS.
 *   protect heap      Protect mode's own allocator (heap/protect_heap.h): plain private
 *                     memory in pages of one size class, per-slot states out of band.
 *   quarantine        Protect mode: freed objects (zeroed) that are not reused until a mark
 *                     proves that no pointer reaches them.
 *   mark              Protect mode: a conservative scan of the roots and the live heap that
 *                     finds which quarantined objects something still points to (scan/mark.h).
 *   root              Memory the mark scans besides the heap: stacks, registers, globals,
 *                     TLS, the program's own mappings (scan/roots.h).
 *   world stop        Parking every other thread at a safe point with its registers saved
 *                     (scan/world.h): the mark and fork use it.
 *   cut wait          A wait of the program's (poll, a sleep, pause...) that a world stop's
 *                     park signal ended with EINTR; libc's wrappers wait again for what is
 *                     left of it (export/waits.h).
 *   concurrent mark   Protect mode: a mark run by Oscar's own thread while the program runs;
 *                     the pages written meanwhile are listed by a write tracker (os/wtrack.h)
 *                     and read again, the last ones with the world stopped briefly.
 *   snapshot mark     Protect mode: the world stops only while a copy-on-write child process
 *                     is made (os/cowchild.h); the child reads the process as it was then.
 *   hook              A function pointer a lower layer calls and a higher layer registers at
 *                     init, so that no include points up (src/README.md).
 *   lock rank         Every lock's place in the one order locks are taken in (base/lock.h).
 *
 * Types (where declared)
 *   oscar_api_v1 (base/api_abi.h), fmt (base/fmt.h), lock_rank (base/lock.h),
 *   option_id (base/options.h), stat_id (base/stats.h), msg_id (base/messages.h),
 *   os_call_kind, os_dirent, os_ksigaction (os/os.h), os_kept (os/kept.h), os_kheld (os/kheld.h),
 *   os_nopark (os/nopark.h),
 *   os_giveway (os/giveway.h), wtrack, wtrack_run (os/wtrack.h), cow_child, cow_chan (os/cowchild.h),
 *   region, region_hooks, page_kind (mem/region.h), span, span_state, canon (mem/canon.h),
 *   page_view (mem/mapview.h), object_info, object_state, report_caller, alloc_kind
 *   (report/report.h), obj_record (report/stack.h), dwarf_frame (report/dwarf.h), module,
 *   unwind_regs (report/unwind.h), thread_cache, thread_state, class_cache, retire_queue
 *   (heap/thread.h), keep_claim (heap/keep.h), ph_heap, ph_page, ph_meta, ph_kind, ph_slot,
 *   ph_own, ph_caller (heap/protect_heap.h), world_thread, world_send (scan/world.h), root_kind,
 *   root_range (scan/roots.h), maps_line (scan/maps.h), wait (export/waits.h).
 */
#ifndef OSCAR_CORE_H
#define OSCAR_CORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/lock.h"

#define OSCAR_PAGE 4096UL
#define OSCAR_PAGE_SHIFT 12
#define OSCAR_SMALL_MAX 2048UL
#define OSCAR_MIN_ALIGN 16UL
#define OSCAR_MAX_RUN_PAGES 1024

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define OSCAR_HIDDEN __attribute__((visibility("hidden")))
#define OSCAR_EXPORT __attribute__((visibility("default")))

static inline uintptr_t align_up(uintptr_t v, uintptr_t a) { return (v + a - 1) & ~(a - 1); }
static inline uintptr_t pages_for(size_t bytes) {
    return (bytes + OSCAR_PAGE - 1) >> OSCAR_PAGE_SHIFT;
}

/* Where the allocator's initialisation stands (modes/alloc.c's oscar_init runs it; base/core.c
 * holds the word): 0 = not started, 1 = running, 2 = done, 3 = off (Oscar could not set
 * itself up: glibc's malloc serves the process, modes/off.h). Lower layers read it and, but
 * at 2, return "not yet" to their caller instead of initialising. */
extern atomic_int oscar_init_state;

#endif
