#!/usr/bin/env python3
"""Checks that docs/from-redisson.md shows this example's code, so the guide's code is code
that compiles and runs (run.sh calls it after building the application).

Each ```java or ```yaml block of the guide must be found in one file under src/main, its
lines in order and adjacent, compared without their indentation and skipping blank lines.
A block right after a line `<!-- seed: … -->` (the seed articles' code) or
`<!-- before: … -->` (a sketch of the code being replaced) is not checked.
Exits 1 naming each block not found.
"""
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
GUIDE = HERE.parent.parent / "docs" / "from-redisson.md"
FENCE = re.compile(r"^\s*```(java|ya?ml)\s*$")
EXEMPT = re.compile(r"^<!-- (seed|before): .* -->$")


def lines_of(text):
    return [line.strip() for line in text.splitlines() if line.strip()]


def blocks(guide):
    """(line number, language, text) of each fenced block not marked as another's code."""
    rows = guide.splitlines()
    i = 0
    previous = ""
    while i < len(rows):
        match = FENCE.match(rows[i])
        if match:
            start = i
            end = next(j for j in range(i + 1, len(rows)) if rows[j].strip() == "```")
            if not EXEMPT.match(previous):
                yield start + 1, match.group(1), "\n".join(rows[start + 1:end])
            i = end
            previous = ""
        elif rows[i].strip():
            previous = rows[i].strip()
        i += 1


def found_in(snippet, source):
    n = len(snippet)
    return any(source[k:k + n] == snippet for k in range(len(source) - n + 1))


def main():
    sources = {path: lines_of(path.read_text(encoding="utf-8"))
               for path in (HERE / "src" / "main").rglob("*") if path.suffix in (".java", ".yml", ".yaml")}
    checked = 0
    missing = []
    for line, language, text in blocks(GUIDE.read_text(encoding="utf-8")):
        checked += 1
        snippet = lines_of(text)
        if not any(found_in(snippet, source) for source in sources.values()):
            missing.append(f"{GUIDE.name}:{line}: this {language} block is not in {HERE.name}/src/main")
    if checked == 0:
        missing.append(f"{GUIDE.name}: no block checked; is the guide where it was?")
    for message in missing:
        print(message, file=sys.stderr)
    if missing:
        return 1
    print(f"{GUIDE.name}: its {checked} blocks of the example's code are the example's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
