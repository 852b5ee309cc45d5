"""The glossary at the top of src/base/core.h stays true: every term it defines is used in
src/, and every struct and enum declared in a header of src/ is listed in it."""
import re

from conftest import REPO

SRC = REPO / "src"
CORE = SRC / "base" / "core.h"


def glossary():
    text = CORE.read_text()
    block = text[text.index("Glossary"):text.index("*/")]
    terms_part, types_part = block.split("Types (where declared)")
    terms = []
    for line in terms_part.splitlines():
        m = re.match(r"^ \*   (\S(?:[^ ]| (?! ))*)  ", line)  # a term, then two spaces
        if m:
            terms.append(m.group(1))
    types = set(re.findall(r"\b([a-z][a-z0-9_]+)\b", types_part))
    return terms, types


def src_text(skip=CORE):
    return "\n".join(p.read_text() for p in SRC.rglob("*")
                     if p.is_file() and p.suffix in (".c", ".h", ".def") and p != skip)


def test_every_glossary_term_is_used():
    terms, _ = glossary()
    assert len(terms) >= 20, terms
    code = src_text().lower()
    for term in terms:
        for word in re.split(r",\s*", term):
            # A term is used if it appears as words (any case) or as an identifier.
            pattern = re.escape(word.lower()).replace(r"\ ", r"[ _]")
            assert re.search(r"\b" + pattern, code), f"glossary term '{word}' is used nowhere in src/"


def test_every_declared_type_is_in_the_glossary():
    _, listed = glossary()
    declared = set()
    for header in SRC.rglob("*.h"):
        declared |= set(re.findall(r"^(?:typedef )?(?:struct|enum) ([a-z_0-9]+) \{",
                                   header.read_text(), re.M))
    missing = sorted(declared - listed)
    assert not missing, f"types missing from the glossary in src/base/core.h: {missing}"


def test_every_page_kind_is_in_the_architecture_doc():
    table = (SRC / "mem" / "page_kinds.def").read_text()
    names = re.findall(r'^PAGE_KIND\(\w+, \d+, "([a-z-]+)"', table, re.M)
    assert len(names) >= 10
    doc = (REPO / "docs" / "architecture.md").read_text()
    missing = [n for n in names if not re.search(r"\b" + re.escape(n) + r"\b", doc)]
    assert not missing, f"page kinds missing from docs/architecture.md: {missing}"
