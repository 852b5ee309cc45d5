/* core: the little state every layer reads (core.h). */
#include "base/core.h"

atomic_int oscar_init_state;
