"""The boundary between the `lakehouse` adapter and this warehouse, read from the source (no
Spark; seconds). The adapter (`dbt/adapters/lakehouse`, its macros in
`dbt/include/lakehouse/macros`) is what any dbt project on Spark + Iceberg gets by installing
it; the project's `macros/` is this warehouse's own. dbt resolves a macro call in the root
project before the adapter, so an adapter macro may call a project macro and still work here,
and break in every other project; and a project macro of the same name silently replaces the
adapter's. A `pip install` of the repository installs the adapter alone, and its code imports
nothing of the project; the macro calls that still cross
are listed below: the platform's move into the adapter takes them off one by one, and none
may be added.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from scripts.spark_config import PROJECT_DIR

ADAPTER_MACROS = PROJECT_DIR / "dbt" / "include" / "lakehouse" / "macros"
ADAPTER_CODE = PROJECT_DIR / "dbt" / "adapters" / "lakehouse"
PROJECT_MACROS = PROJECT_DIR / "macros"
DEFINITION = re.compile(r"\{%-?\s*(?:macro|materialization)\s+(\w+)")
CALL = re.compile(r"(?<![\w.])(\w+)\s*\(")
JINJA_COMMENT = re.compile(r"\{#.*?#\}", re.DOTALL)
SCRIPTS_IMPORT = re.compile(r"^\s*(?:from|import)\s+(scripts[\w.]*)", re.MULTILINE)

# dbt's own macros a project may override: asking the project through them is how any
# adapter learns its naming
DBT_OVERRIDE_POINTS = {"generate_schema_name"}
# the adapter's extension points: a default in the adapter that a project replaces by
# defining a macro of the same name (the only names defined in both)
EXTENSION_POINTS = {"model_backfill"}
# adapter macro file -> the project macros it still calls (to move into the adapter); the
# incremental materialization reaches these only when the project's model_backfill returns a
# backfill or its touched_days noted the days a model recomputes
CROSSING_CALLS = {
    "materializations/incremental/incremental.sql": {
        "backfill_finish", "backfill_head", "backfill_rows", "clear_days_left_empty",
        "written_head",
    },
}  # fmt: skip


def definitions(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.sql")):
        for name in DEFINITION.findall(path.read_text()):
            found.setdefault(name, path)
    return found


def calls_into_project() -> dict[str, set[str]]:
    """adapter macro file -> the macros it calls that only the project defines."""
    project_only = set(definitions(PROJECT_MACROS)) - set(definitions(ADAPTER_MACROS))
    project_only -= DBT_OVERRIDE_POINTS | EXTENSION_POINTS
    crossing: dict[str, set[str]] = {}
    for path in sorted(ADAPTER_MACROS.rglob("*.sql")):
        text = JINJA_COMMENT.sub("", path.read_text())
        called = {name for name in CALL.findall(text) if name in project_only}
        if called:
            crossing[path.relative_to(ADAPTER_MACROS).as_posix()] = called
    return crossing


def test_no_macro_is_defined_both_in_the_adapter_and_in_the_project():
    adapter, project = definitions(ADAPTER_MACROS), definitions(PROJECT_MACROS)
    assert adapter, "no adapter macro found"
    assert sorted(set(adapter) & set(project) - EXTENSION_POINTS) == []


def test_every_extension_point_has_its_default_in_the_adapter():
    """A project that does not define an extension point gets the adapter's default: without
    it the materialization fails on an undefined macro in every project but this one."""
    assert set(definitions(ADAPTER_MACROS)) >= EXTENSION_POINTS


def test_the_adapters_macros_call_no_project_macro_beyond_the_known_crossings():
    crossing = calls_into_project()
    added = {
        path: names - CROSSING_CALLS.get(path, set())
        for path, names in crossing.items()
        if names - CROSSING_CALLS.get(path, set())
    }
    assert added == {}, "adapter macros calling macros only this project defines"
    assert crossing == CROSSING_CALLS, "a crossing is gone: take it off CROSSING_CALLS"


def test_the_adapters_code_imports_no_project_module():
    imports = {}
    for path in sorted(ADAPTER_CODE.glob("*.py")):
        found = set(SCRIPTS_IMPORT.findall(path.read_text()))
        if found:
            imports[path.name] = found
    assert imports == {}


def test_a_pip_install_of_the_repository_installs_the_adapter_alone(tmp_path):
    # the wheel `pip install <repository>` installs (built from the sdist, as pip does): the
    # adapter's two packages with their macros, Java sources and JVM settings; none of this
    # warehouse's code, no command, no build or data folder at the top of site-packages
    source = tmp_path / "repository"  # a copy: the build writes its egg-info beside the sources
    shutil.copytree(
        PROJECT_DIR / "dbt", source / "dbt", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(PROJECT_DIR / "pyproject.toml", source)
    uv = Path(sys.executable).parent / "uv"
    subprocess.run(
        [str(uv), "build", "--quiet", "--out-dir", str(tmp_path), str(source)], check=True
    )
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"dbt", "lakehouse-0.1.0.dist-info"}
    packages = {"/".join(name.split("/")[:3]) for name in names if name.startswith("dbt/")}
    assert packages == {"dbt/adapters/lakehouse", "dbt/include/lakehouse"}
    assert "dbt/include/lakehouse/java/lakehouse/AppendRows.java" in names
    assert "dbt/include/lakehouse/conf/log4j2.properties" in names
    assert "dbt/include/lakehouse/macros/write_audit_publish/wap_publish.sql" in names
    assert "lakehouse-0.1.0.dist-info/entry_points.txt" not in names  # the tools' commands


# --- vars: each defaulted in one place ---------------------------------------------------
VAR_READ = re.compile(r"(?<![\w.])var\(\s*['\"](\w+)['\"]\s*(?:,\s*([^)]*?)\s*)?\)")
ADAPTER_VAR_READ = re.compile(r"lakehouse_var\(\s*['\"](\w+)['\"]\s*\)")
DEFAULTS_MACRO = ADAPTER_MACROS / "configuration" / "lakehouse_var.sql"
PROJECT_SOURCES = ("macros", "models", "snapshots", "tests/dbt", "dbt_project.yml")


def project_files() -> list[Path]:
    found: list[Path] = []
    for name in PROJECT_SOURCES:
        path = PROJECT_DIR / name
        found += (
            [path] if path.is_file() else sorted(path.rglob("*.sql")) + sorted(path.rglob("*.yml"))
        )
    return found


def adapter_defaults() -> dict[str, str]:
    """{var: its default as written} from lakehouse_var_defaults."""
    table = DEFAULTS_MACRO.read_text().split("lakehouse_var_defaults() %}", 1)[1]
    table = table.split("{% endmacro", 1)[0]
    return dict(re.findall(r"^\s{8}'(\w+)': ([^\n]*?),?$", table, re.MULTILINE))


def test_the_adapter_reads_its_vars_through_one_table_of_defaults():
    """`lakehouse_var(name)` is the adapter's only way to read a var, and every name it asks
    for has its default in lakehouse_var_defaults: a project that sets none still runs, and no
    default is written twice."""
    defaults = set(adapter_defaults())
    assert {"write_audit_publish", "run_lock_ttl_minutes", "on_maintenance_error"} <= defaults
    direct, unknown = [], set()
    for path in sorted(ADAPTER_MACROS.rglob("*.sql")):
        text = JINJA_COMMENT.sub("", path.read_text())
        if path != DEFAULTS_MACRO:
            direct += [f"{path.name}: var('{name}')" for name, _ in VAR_READ.findall(text)]
        unknown |= set(ADAPTER_VAR_READ.findall(text)) - defaults
    assert direct == [], "an adapter macro reading a var without lakehouse_var"
    assert unknown == set(), "lakehouse_var names without a default"


def test_every_var_the_project_reads_is_declared_once_in_dbt_project_yml():
    """The warehouse's macros and models read a var as var('<name>'), declared with its value
    in dbt_project.yml's `vars:`; the adapter's vars are set there only to change them.
    dbt renders the configs of dbt_project.yml itself with --vars alone, so a var read there
    has its default where it is read, once, and is not declared as well; one that is also
    the adapter's has the adapter's default."""
    import yaml

    project_yml = PROJECT_DIR / "dbt_project.yml"
    declared = set(yaml.safe_load(project_yml.read_text())["vars"])
    adapter = adapter_defaults()
    inline, undeclared = [], set()
    for path in project_files():
        if path == project_yml:
            continue
        for name, default in VAR_READ.findall(JINJA_COMMENT.sub("", path.read_text())):
            if default:
                inline.append(f"{path.relative_to(PROJECT_DIR)}: var('{name}', {default})")
            if name not in declared and name not in adapter:
                undeclared.add(name)
    assert inline == [], "a default written where the var is read"
    assert undeclared == set(), "vars read but not declared in dbt_project.yml"
    assert declared & set(adapter) == set(), "an adapter var declared again"
    in_configs = VAR_READ.findall(project_yml.read_text().split("\nvars:", 1)[1])
    names = [name for name, _ in in_configs]
    assert in_configs and all(default for _, default in in_configs), "a config var without default"
    assert len(names) == len(set(names)), "a config var defaulted twice"
    assert set(names).isdisjoint(declared), "a config var also declared in vars:"
    assert {n: d for n, d in in_configs if n in adapter} == {
        n: adapter[n] for n in names if n in adapter
    }
