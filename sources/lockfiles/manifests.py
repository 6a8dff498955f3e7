"""The manifests that say which packages a project asks for directly: ``pyproject.toml``
(``[project]`` dependencies and optional dependencies, ``[dependency-groups]``, poetry's and
pdm's dependency tables), ``Pipfile`` and ``package.json`` (``dependencies``,
``optionalDependencies``, ``devDependencies``): the lockfiles' packages they name are direct
where a lockfile cannot tell."""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from .reading import Reading, as_dict, as_list, npm_sections, present


def requirement_name(text: object) -> str | None:
    if not isinstance(text, str):
        return None
    try:
        return canonicalize_name(Requirement(text).name)
    except InvalidRequirement:
        return None


def pyproject_direct(reading: Reading) -> set[str] | None:
    """The direct names ``pyproject.toml`` declares (None without the file)."""
    table = reading.project_toml("pyproject.toml")
    if table is None:
        return None
    project = as_dict(table.get("project"))
    specs: list[object] = list(as_list(project.get("dependencies")))
    for extra in as_dict(project.get("optional-dependencies")).values():
        specs += as_list(extra)
    tool = as_dict(table.get("tool"))
    if reading.dev:
        for group in as_dict(table.get("dependency-groups")).values():
            specs += as_list(group)
        for group in as_dict(as_dict(tool.get("pdm")).get("dev-dependencies")).values():
            specs += as_list(group)
        specs += as_list(as_dict(tool.get("uv")).get("dev-dependencies"))
    names = {n for n in map(requirement_name, specs) if n}
    poetry = as_dict(tool.get("poetry"))
    tables = [as_dict(poetry.get("dependencies"))]
    if reading.dev:
        tables.append(as_dict(poetry.get("dev-dependencies")))
        tables += [as_dict(as_dict(g).get("dependencies"))
                   for g in as_dict(poetry.get("group")).values()]
    for deps in tables:
        names |= {canonicalize_name(k) for k in deps if k.lower() != "python"}
    return names


def pipfile_direct(reading: Reading) -> set[str] | None:
    table = reading.project_toml("Pipfile")
    if table is None:
        return None
    sections = ["packages"] + (["dev-packages"] if reading.dev else [])
    return {canonicalize_name(k) for s in sections for k in as_dict(table.get(s))}


def package_json_direct(reading: Reading) -> dict[str, str] | None:
    """``package.json``'s direct dependencies: name -> range (None without the file),
    kept in ``reading.npm_direct`` for the lockfiles that need the ranges."""
    path = reading.project / "package.json"
    if not present(path):
        return None
    document = as_dict(reading.json(path))
    found: dict[str, str] = {}
    for section in npm_sections(reading.dev):
        for name, spec in as_dict(document.get(section)).items():
            if isinstance(spec, str):
                found.setdefault(name, spec)
    reading.npm_direct = found
    return found
