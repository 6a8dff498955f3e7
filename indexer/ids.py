"""The Section ID algorithm (cache-spec "Section ID Algorithm", docs/cache-format.md "Sections
and ids").

Ids are assigned in one global pass: files in code-point order of their repo-relative
POSIX path, sections in file order. A colliding id gets ``-<md5(content[:200])[:6]>``;
if that collides too, ``-2``, ``-3``... so ids are always unique.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from .slug import slugify


def section_path(file: str, kind: str, slug: str) -> str:
    """Navigation path: ``file#slug`` for a headed section, ``file`` for root and parts."""
    return f"{file}#{slug}" if kind == "heading" else file


def heading_slug(kind: str, title: str) -> str:
    """What a section's id and path are made of: its title's slug (headed sections only)."""
    return slugify(title) if kind == "heading" else ""


class IdAssigner:
    """Feed it files in sorted path order; it returns each file's section ids."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        # The last ``n`` given to each ``<candidate>-<n>``: ``used`` only grows, so the next
        # free n is above it. Without it, k equal headings cost k^2/2 lookups.
        self.last_n: dict[str, int] = {}

    def assign(self, file: str, sections: list[tuple[str, str, str]]) -> list[str]:
        """Ids for one file's sections, given as (kind, ``heading_slug``, dedup hash) in
        file order."""
        prefix = slugify(PurePosixPath(file).stem)
        used = self.used
        ids: list[str] = []
        part = 0
        for kind, slug, dedup in sections:
            if kind == "root":
                candidate = f"{prefix}-root"
            elif kind == "part":
                part += 1
                candidate = f"{prefix}-part-{part}"
            else:
                candidate = f"{prefix}-{slug}"
            if candidate in used:
                candidate = f"{candidate}-{dedup}"
                if candidate in used:
                    n = self.last_n.get(candidate, 1) + 1
                    while f"{candidate}-{n}" in used:
                        n += 1
                    self.last_n[candidate] = n
                    candidate = f"{candidate}-{n}"
            used.add(candidate)
            ids.append(candidate)
        return ids
