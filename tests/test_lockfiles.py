"""sources/lockfiles/: a project's pins read as data from each lockfile format."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import write_tree

from doc_index.sources.lockfiles import Pin, ProjectPins, read_project_pins

H = "sha256:" + "a" * 64

UV_LOCK = f"""version = 1
requires-python = ">=3.10"

[[package]]
name = "myapp"
version = "0.1.0"
source = {{ editable = "." }}
dependencies = [{{ name = "flask" }}, {{ name = "local-lib" }}, {{ name = "gitdep" }}]

[package.optional-dependencies]
http = [{{ name = "httpx" }}]

[package.dev-dependencies]
dev = [{{ name = "pytest" }}]

[[package]]
name = "local-lib"
version = "0.0.1"
source = {{ directory = "libs/local" }}

[[package]]
name = "gitdep"
version = "1.0.0"
source = {{ git = "https://github.com/o/gitdep?rev=abc#abc" }}

[[package]]
name = "Flask"
version = "3.1.0"
source = {{ registry = "https://pypi.org/simple" }}
dependencies = [{{ name = "werkzeug" }}]
sdist = {{ url = "https://files/flask-3.1.0.tar.gz", hash = "{H}", size = 1 }}

[[package]]
name = "werkzeug"
version = "3.1.3"
source = {{ registry = "https://pypi.org/simple" }}

[[package]]
name = "httpx"
version = "0.28.1"
source = {{ registry = "https://mirror.example/simple" }}

[[package]]
name = "pytest"
version = "8.3.4"
source = {{ registry = "https://pypi.org/simple" }}
"""


def _pins(project: Path, **options: bool) -> ProjectPins:
    return read_project_pins(project, **options)


def test_uv_lock_direct_dev_transitive_and_non_index(tmp_path: Path) -> None:
    write_tree(tmp_path, {"uv.lock": UV_LOCK})
    result = _pins(tmp_path)
    assert result == ProjectPins((
        Pin("pypi", "flask", "3.1.0", True, ("uv.lock",), "https://pypi.org/simple", (H,),
            ("https://pypi.org/simple",)),
        Pin("pypi", "httpx", "0.28.1", True, ("uv.lock",), "https://mirror.example/simple",
            indexes=("https://mirror.example/simple",)),
        Pin("pypi", "pytest", "8.3.4", True, ("uv.lock",), "https://pypi.org/simple",
            indexes=("https://pypi.org/simple",)),
    ), ("uv.lock: local-lib does not come from an index or registry (git, URL or path): "
        "no published version to fetch",
        "uv.lock: gitdep does not come from an index or registry (git, URL or path): "
        "no published version to fetch"), ("uv.lock",))
    assert [p.name for p in _pins(tmp_path, dev=False).pins] == ["flask", "httpx"]
    every = _pins(tmp_path, all_locked=True).pins
    assert [(p.name, p.direct) for p in every] == [
        ("flask", True), ("httpx", True), ("pytest", True), ("werkzeug", False)]


def test_poetry_lock_with_pyproject_direct_names(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "pyproject.toml": """
[tool.poetry.dependencies]
python = "^3.10"
Requests = "^2.31"
[tool.poetry.group.docs.dependencies]
sphinx = "*"
""",
        "poetry.lock": f"""
[[package]]
name = "requests"
version = "2.32.3"
files = [
    {{file = "requests-2.32.3-py3-none-any.whl", hash = "sha256:{'b' * 64}"}},
    {{file = "requests-2.32.3.tar.gz", hash = "{H}"}},
]
[[package]]
name = "urllib3"
version = "2.2.3"
[[package]]
name = "sphinx"
version = "7.4.7"
[package.source]
type = "legacy"
url = "https://private.example/simple"
reference = "private"
[[package]]
name = "mylib"
version = "1.0"
[package.source]
type = "git"
url = "https://github.com/o/mylib"
"""})
    assert _pins(tmp_path).pins == (
        Pin("pypi", "requests", "2.32.3", True, ("poetry.lock",), None, (H,)),
        Pin("pypi", "sphinx", "7.4.7", True, ("poetry.lock",), "https://private.example/simple",
            indexes=("https://private.example/simple",)),
    )


def test_pdm_lock_pipfile_lock_and_pylock(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "pyproject.toml": ('[project]\n'
                           'dependencies = ["attrs>=24", "click[extra]; python_version>\'3\'"]\n'
                           '[dependency-groups]\ntest = ["pytest", {include-group = "x"}]\n'),
        "pdm.lock": f"""[metadata]
groups = ["default"]
[[package]]
name = "attrs"
version = "24.2.0"
files = [{{file = "attrs-24.2.0.tar.gz", hash = "{H}"}}]
[[package]]
name = "click"
version = "8.1.7"
""",
        "pylock.toml": """lock-version = "1.0"
[[packages]]
name = "pytest"
version = "8.3.4"
index = "https://pypi.org/simple"
sdist = { url = "https://files/pytest-8.3.4.tar.gz", hashes = { sha256 = "cc" } }
[[packages]]
name = "click"
version = "8.1.7"
[[packages]]
name = "vcs-thing"
vcs = { type = "git", url = "https://x" }
""",
        "Pipfile": '[packages]\nsix = "*"\n[dev-packages]\nnose = "*"\n',
        "Pipfile.lock": json.dumps({
            "_meta": {"sources": [{"name": "pypi", "url": "https://pypi.org/simple"}]},
            "default": {"six": {"version": "==1.16.0", "hashes": [H], "index": "pypi"},
                        "idna": {"version": "==3.7"},
                        "editable": {"path": ".", "editable": True}},
            "develop": {"nose": {"version": "==1.3.7"}}}),
    })
    result = _pins(tmp_path)
    assert result.pins == (
        Pin("pypi", "attrs", "24.2.0", True, ("pdm.lock",), None, (H,)),
        Pin("pypi", "click", "8.1.7", True, ("pdm.lock", "pylock.toml")),
        Pin("pypi", "nose", "1.3.7", True, ("Pipfile.lock",)),
        Pin("pypi", "pytest", "8.3.4", True, ("pylock.toml",), "https://pypi.org/simple",
            ("sha256:cc",), ("https://pypi.org/simple",)),
        Pin("pypi", "six", "1.16.0", True, ("Pipfile.lock",), "https://pypi.org/simple", (H,),
            ("https://pypi.org/simple",)),
    )
    assert result.files == ("pyproject.toml", "Pipfile", "pdm.lock", "Pipfile.lock",
                            "pylock.toml")


def test_requirements_includes_constraints_hashes_markers_and_unpinned(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "requirements.txt": (
            "-i https://me:tok@private.example/simple\n"
            "# a comment\n"
            "Flask[async]==3.1.0 ; python_version >= '3.9' \\\n"
            "    --hash=sha256:abc \\\n    --hash=sha256:def\n"
            "-r requirements/base.txt\n"
            "-c constraints.txt\n"
            "requests  # pinned by the constraints file\n"
            "numpy>=1.26\n"
            "pandas==2.*\n"
            "-e ./local\n"
            "mylib @ https://example.com/mylib-1.0.tar.gz\n"
            "-r ../outside.txt\n"
            "-r https://example.com/remote.txt\n"
            "-r missing.txt\n"),
        "requirements/base.txt": ("-r ../requirements.txt\n--extra-index-url=https://x.example/s\n"
                                  "-f ./wheels\nattrs===24.2.0\n"),
        "constraints.txt": "requests==2.32.3\nnot-required==1.0\n",
        "requirements-dev.txt": (
            "pytest==8.3.4\n    # via -r requirements-dev.in\n"
            "pluggy==1.5.0\n    # via\n    #   pytest\n"
            "iniconfig==2.0.0\n    # via\n    #   -r requirements-dev.in\n    #   pytest\n"),
    })
    (tmp_path.parent / "outside.txt").write_text("evil==6.6.6\n")
    result = _pins(tmp_path)
    private = "https://me:tok@private.example/simple"
    assert result.pins == (
        Pin("pypi", "attrs", "24.2.0", True, ("requirements/base.txt",),
            indexes=("https://x.example/s",), find_links=("./wheels",)),
        Pin("pypi", "flask", "3.1.0", True, ("requirements.txt",), private, indexes=(private,)),
        Pin("pypi", "iniconfig", "2.0.0", True, ("requirements-dev.txt",)),
        Pin("pypi", "pytest", "8.3.4", True, ("requirements-dev.txt",)),
        Pin("pypi", "requests", "2.32.3", True, ("requirements.txt",), private,
            indexes=(private,)),
    )
    assert result.warnings == (
        "requirements.txt:11: editable ./local is not pinned to a release",
        f"{tmp_path.parent / 'outside.txt'}: outside the project, not read",
        "requirements.txt:14: include https://example.com/remote.txt is a URL, not read",
        "requirements.txt:15: include missing.txt not found",
        "requirements.txt:9: numpy>=1.26 is not pinned (==)",
        "requirements.txt:10: pandas==2.* is not pinned (==)",
        "requirements.txt:12: mylib comes from a URL, not an index",
    )
    assert [p.name for p in _pins(tmp_path, all_locked=True).pins] == [
        "attrs", "flask", "iniconfig", "pluggy", "pytest", "requests"]


def test_requirements_include_through_a_symlink_out_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "p"
    write_tree(project, {"requirements.txt": "-r link.txt\n"})
    (tmp_path / "secret.txt").write_text("evil==1.0\n")
    (project / "link.txt").symlink_to(tmp_path / "secret.txt")
    result = _pins(project)
    assert result.pins == ()
    assert result.warnings == ("link.txt: outside the project, not read",)


PACKAGE_JSON = json.dumps({"name": "app", "dependencies": {"react": "^18.2.0",
                                                           "alias": "npm:string-width@^4"},
                           "devDependencies": {"typescript": "~5.4.0"},
                           "peerDependencies": {"vue": "*"}})


def test_package_lock_v3_and_v1(tmp_path: Path) -> None:
    v3 = {"lockfileVersion": 3, "packages": {
        "": {"name": "app", "dependencies": {"react": "^18.2.0", "alias": "npm:string-width@^4"},
             "devDependencies": {"typescript": "~5.4.0"}},
        "node_modules/react": {"version": "18.2.0",
                               "resolved": "https://registry.npmjs.org/react/-/react-18.2.0.tgz",
                               "integrity": "sha512-AAA"},
        "node_modules/alias": {"name": "string-width", "version": "4.2.3"},
        "node_modules/typescript": {"version": "5.4.5", "dev": True},
        "node_modules/loose-envify": {"version": "1.4.0"},
        "node_modules/react/node_modules/loose-envify": {"version": "1.3.0"},
        "node_modules/gitdep": {"version": "1.0.0", "resolved": "git+ssh://git@github.com/o/r.git"},
        "node_modules/ws-pkg": {"resolved": "packages/ws-pkg", "link": True},
        "packages/ws-pkg": {"name": "ws-pkg", "dependencies": {"lodash": "^4"}},
        "node_modules/lodash": {"version": "4.17.21"}}}
    write_tree(tmp_path, {"package.json": PACKAGE_JSON, "package-lock.json": json.dumps(v3)})
    assert [(p.name, p.version, p.direct, p.index, p.hashes) for p in _pins(tmp_path).pins] == [
        ("lodash", "4.17.21", True, None, ()),
        ("react", "18.2.0", True, "https://registry.npmjs.org/", ("sha512-AAA",)),
        ("string-width", "4.2.3", True, None, ()),
        ("typescript", "5.4.5", True, None, ())]
    assert [(p.name, p.version) for p in _pins(tmp_path, all_locked=True).pins
            if not p.direct] == [("loose-envify", "1.3.0"), ("loose-envify", "1.4.0")]
    v1 = {"lockfileVersion": 1, "dependencies": {
        "react": {"version": "18.2.0", "integrity": "sha512-AAA",
                  "dependencies": {"loose-envify": {"version": "1.3.0"}}},
        "alias": {"version": "npm:string-width@4.2.3"},
        "typescript": {"version": "5.4.5", "dev": True},
        "local": {"version": "file:../local"}}}
    write_tree(tmp_path, {"package-lock.json": json.dumps(v1)})
    assert [(p.name, p.version, p.direct) for p in _pins(tmp_path, all_locked=True).pins] == [
        ("loose-envify", "1.3.0", False), ("react", "18.2.0", True),
        ("string-width", "4.2.3", True), ("typescript", "5.4.5", True)]


def test_pnpm_lock_versions_5_6_9(tmp_path: Path) -> None:
    write_tree(tmp_path, {"package.json": PACKAGE_JSON, "pnpm-lock.yaml": """
lockfileVersion: '9.0'
importers:
  .:
    dependencies:
      react:
        specifier: ^18.2.0
        version: 18.2.0
      alias:
        specifier: npm:string-width@^4
        version: string-width@4.2.3
      local:
        specifier: workspace:*
        version: link:../local
    devDependencies:
      typescript:
        specifier: ~5.4.0
        version: 5.4.5(@types/node@20.0.0)
packages:
  react@18.2.0:
    resolution: {integrity: sha512-AAA}
  string-width@4.2.3:
    resolution: {integrity: sha512-BBB}
  typescript@5.4.5:
    resolution: {integrity: sha512-CCC}
  loose-envify@1.4.0:
    resolution: {integrity: sha512-DDD}
  gitpkg@https://codeload.github.com/o/r/tar.gz/abc:
    resolution: {tarball: https://codeload.github.com/o/r/tar.gz/abc}
"""})
    assert [(p.name, p.version, p.direct, p.hashes) for p in _pins(tmp_path).pins] == [
        ("react", "18.2.0", True, ("sha512-AAA",)),
        ("string-width", "4.2.3", True, ("sha512-BBB",)),
        ("typescript", "5.4.5", True, ("sha512-CCC",))]
    write_tree(tmp_path, {"pnpm-lock.yaml": """
lockfileVersion: '6.0'
dependencies:
  react:
    specifier: ^18.2.0
    version: 18.2.0
  alias:
    specifier: npm:string-width@^4
    version: /string-width@4.2.3
packages:
  /react@18.2.0:
    resolution: {integrity: sha512-AAA}
  /string-width@4.2.3:
    resolution: {integrity: sha512-BBB}
  /@scope/dep@1.0.0(react@18.2.0):
    resolution: {integrity: sha512-EEE}
"""})
    assert [(p.name, p.version, p.direct) for p in _pins(tmp_path, all_locked=True).pins] == [
        ("@scope/dep", "1.0.0", False), ("react", "18.2.0", True),
        ("string-width", "4.2.3", True)]
    write_tree(tmp_path, {"pnpm-lock.yaml": """
lockfileVersion: 5.4
specifiers:
  react: ^18.2.0
dependencies:
  react: 18.2.0_sfoxds7t5ydpegc3knd667wn6m
packages:
  /react/18.2.0_sfoxds7t5ydpegc3knd667wn6m:
    resolution: {integrity: sha512-AAA}
  /@babel/core/7.24.0:
    resolution: {integrity: sha512-FFF}
"""})
    assert [(p.name, p.version, p.direct) for p in _pins(tmp_path, all_locked=True).pins] == [
        ("@babel/core", "7.24.0", False), ("react", "18.2.0", True)]


def test_yarn_lock_classic_and_berry(tmp_path: Path) -> None:
    write_tree(tmp_path, {"package.json": PACKAGE_JSON, "yarn.lock": """\
# THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.
# yarn lockfile v1


"alias@npm:string-width@^4":
  version "4.2.3"
  resolved "https://registry.yarnpkg.com/string-width/-/string-width-4.2.3.tgz#abc"
  integrity sha512-BBB

react@^18.2.0, react@^18.0.0:
  version "18.2.0"
  resolved "https://registry.yarnpkg.com/react/-/react-18.2.0.tgz#def"
  integrity sha512-AAA
  dependencies:
    loose-envify "^1.1.0"

loose-envify@^1.1.0:
  version "1.4.0"
  resolved "https://registry.yarnpkg.com/loose-envify/-/loose-envify-1.4.0.tgz"

"typescript@~5.4.0":
  version "5.4.5"
  resolved "https://registry.yarnpkg.com/typescript/-/typescript-5.4.5.tgz"

"gitdep@github:o/r":
  version "1.0.0"
  resolved "https://codeload.github.com/o/r/tar.gz/abc"
"""})
    assert [(p.name, p.version, p.direct, p.index) for p in _pins(tmp_path).pins] == [
        ("react", "18.2.0", True, "https://registry.yarnpkg.com/"),
        ("string-width", "4.2.3", True, "https://registry.yarnpkg.com/"),
        ("typescript", "5.4.5", True, "https://registry.yarnpkg.com/")]
    write_tree(tmp_path, {"package.json": json.dumps({"name": "app"}), "yarn.lock": """\
__metadata:
  version: 8
  cacheKey: 10c0

"app@workspace:.":
  version: 0.0.0-use.local
  resolution: "app@workspace:."
  dependencies:
    alias: "npm:string-width@^4"
    react: "npm:^18.2.0"
    typescript: "patch:typescript@npm%3A~5.4.0#optional!builtin<compat/typescript>"
  languageName: unknown
  linkType: soft

"alias@npm:string-width@^4":
  version: 4.2.3
  resolution: "string-width@npm:4.2.3"

"react@npm:^18.0.0, react@npm:^18.2.0":
  version: 18.2.0
  resolution: "react@npm:18.2.0"

"typescript@npm:~5.4.0":
  version: 5.4.5
  resolution: "typescript@npm:5.4.5"

"typescript@patch:typescript@npm%3A~5.4.0#optional!builtin<compat/typescript>":
  version: 5.4.5
  resolution: "typescript@patch:typescript@npm%3A5.4.5#optional!builtin<compat/typescript>\
::version=5.4.5&hash=5adc0c"

"loose-envify@npm:^1.1.0":
  version: 1.4.0
  resolution: "loose-envify@npm:1.4.0"
"""})
    assert [(p.name, p.version, p.direct) for p in _pins(tmp_path, all_locked=True).pins] == [
        ("loose-envify", "1.4.0", False), ("react", "18.2.0", True),
        ("string-width", "4.2.3", True), ("typescript", "5.4.5", True)]


def test_two_lockfiles_merge_and_two_versions_warn(tmp_path: Path) -> None:
    write_tree(tmp_path, {"uv.lock": UV_LOCK, "requirements.txt": "flask==3.0.0\nhttpx==0.28.1\n"})
    result = _pins(tmp_path)
    assert [(p.name, p.version, p.sources) for p in result.pins] == [
        ("flask", "3.0.0", ("requirements.txt",)), ("flask", "3.1.0", ("uv.lock",)),
        ("httpx", "0.28.1", ("requirements.txt", "uv.lock")),
        ("pytest", "8.3.4", ("uv.lock",))]
    assert result.warnings[-1] == "pypi:flask is pinned at 2 versions: 3.0.0, 3.1.0"


def test_hostile_lockfiles_are_warnings_not_crashes(tmp_path: Path) -> None:
    write_tree(tmp_path, {
        "package.json": "[" * 100_000,
        "pnpm-lock.yaml": f"packages: !!python/object/apply:os.system ['touch {tmp_path}/pwned']\n",
        # a self-referencing alias is built as one shared list, walked by nobody
        "yarn.lock": "__metadata:\n  version: 8\n" + "a: &a [" + "*a, " * 10 + "]\n",
        "uv.lock": "a = " + "[" * 100_000 + "\n",
        "Pipfile.lock": "{\"default\": 42}",
    })
    result = _pins(tmp_path)
    assert result.pins == ()
    assert not (tmp_path / "pwned").exists()
    assert [w.split(" (")[0] for w in result.warnings] == [
        "package.json: does not parse", "uv.lock: does not parse",
        "pnpm-lock.yaml: does not parse"]


def test_oversized_lockfile_is_not_read(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    from doc_index.sources.lockfiles import reading

    monkeypatch.setattr(reading, "MAX_PARSED_BYTES", 100)  # (not JSON: that cap)
    write_tree(tmp_path, {"requirements.txt": "flask==3.1.0\n" * 20})
    assert _pins(tmp_path) == ProjectPins((), ("requirements.txt: over 100 bytes, not read",),
                                          ())


def test_empty_project(tmp_path: Path) -> None:
    assert _pins(tmp_path) == ProjectPins((), (), ())
