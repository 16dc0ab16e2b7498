#!/usr/bin/env python3
"""
Issue 19: turns pyxform v4.5.0's own test modules (shared/reference/pyxform-tests) into test data
for pyxform-suite.test.ts: every `assertPyxformXform(...)` call becomes one JSON case holding the
XLSForm sheets (the markdown tables parsed as pyxform parses them, or the `ss_structure` dict) and
the expectations, with the f-strings and the tests/xpath_helpers calls already evaluated.

How: the test modules are imported as the package `tests` with `tests.pyxform_test_case` replaced
by a recorder whose `assertPyxformXform` stores its arguments, and every other assert a no-op.
pyxform itself is not installed: the few pure modules the tests read constants and error texts
from (errors, constants, util/enum, aliases, question_type_dictionary, and the validators holding
warning texts) are loaded from a pyxform v4.5.0 source tree (a checkout, or a git directory read
at `--rev`; data only, none of it is committed); every other `pyxform.*` module
and third-party import (lxml, openpyxl, psutil…) is a stand-in whose attributes are mocks, so test
code that calls pyxform directly records nothing (those are not assertPyxformXform cases) or
records a case marked not runnable when a mock leaked into its expectations.

  python3 test/unit/xlsform/pyxform-suite/extract.py \
    --tests ../shared/reference/pyxform-tests --pyxform-src <pyxform checkout or git dir> [--rev v4.5.0]

Writes cases.json beside this script (stable: re-running gives the same file). A case is one call,
so a test looping over sub-cases gives several (`id#n`); cases needing ODK Validate (Java), a
pyxform Survey object, or values computed by pyxform internals are kept with `runnable: false`.
"""

import argparse
import datetime
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
REAL_PYXFORM = [
    "errors", "constants", "util/__init__", "util/enum", "aliases", "question_type_dictionary",
    "validators/pyxform/translations_checks", "validators/pyxform/pyxform_reference",
    "validators/pyxform/question_types/__init__",
]
STUB_TOP = {"pyxform", "lxml", "openpyxl", "xlrd", "psutil", "defusedxml", "requests"}
MODULE_ERRORS = {}
REAL_SOURCES = {}

# --- markdown tables, read as pyxform's md reader reads them -------------------------------------
MD_COMMENT = re.compile(r"^\s*#")
MD_COMMENT_INLINE = re.compile(r"^(.*)(#[^|]+)$")
MD_CELL = re.compile(r"\s*\|(.*)\|\s*")
MD_SEPARATOR = re.compile(r"^[\|-]+$")
MD_PIPE = re.compile(r"(?<!\\)\|")


def md_cell(cell):
    if not cell or cell.isspace():
        return None
    return cell.strip().replace("\\|", "|")


def md_sheets(md):
    """Markdown tables → [[sheet name, rows]]; the first column names a sheet, blank rows dropped."""
    sheets = []
    current = None
    for line in md.split("\n"):
        if MD_COMMENT.match(line):
            continue
        m = MD_COMMENT_INLINE.match(line)
        if m:
            line = m.group(1)
        m = MD_CELL.match(line)
        if not m or MD_SEPARATOR.match(m.group(1)):
            continue
        parts = MD_PIPE.split(m.group(1))
        first = md_cell(parts[0])
        row = [md_cell(c) for c in parts[1:]]
        if first is not None:
            current = [first, []]
            sheets.append(current)
        if current is not None and any(c is not None for c in row):
            current[1].append(row)
    return sheets


def ss_sheets(ss):
    """pyxform's ss_structure ({sheet: [ {header: value} ]}) → [[sheet name, rows]]."""
    out = []
    for name, rows in ss.items():
        headers = []
        for r in rows:
            for k in r:
                if k not in headers:
                    headers.append(k)
        out.append([name, [headers] + [[r.get(h) for h in headers] for r in rows]])
    return out


# --- stand-ins --------------------------------------------------------------------------------------
class StubModule(types.ModuleType):
    """A module whose every attribute is a mock (pyxform internals, lxml, openpyxl…)."""

    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if f"{self.__name__}.{attr}" in REAL_SOURCES:  # `from pyxform import constants`
            return importlib.import_module(f"{self.__name__}.{attr}")
        value = mock.MagicMock(name=f"{self.__name__}.{attr}")
        setattr(self, attr, value)
        return value


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, real):
        self.real = real  # "pyxform.errors" → source text

    def find_spec(self, fullname, path, target=None):
        top = fullname.split(".")[0]
        if top not in STUB_TOP:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        if spec.name in self.real:
            return None
        return StubModule(spec.name)

    def exec_module(self, module):
        src = self.real.get(module.__name__)
        if src is not None:
            module.__path__ = []
            exec(compile(src, f"<{module.__name__}>", "exec"), module.__dict__)


def load_pyxform_sources(src, rev):
    real = {}
    for rel in REAL_PYXFORM:
        name = "pyxform." + rel.replace("/__init__", "").replace("/", ".")
        path = os.path.join(src, "pyxform", rel + ".py")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                real[name] = f.read()
        else:
            real[name] = subprocess.run(
                ["git", "--git-dir", src, "show", f"{rev}:pyxform/{rel}.py"],
                check=True, capture_output=True, text=True,
            ).stdout
    return real


# --- the recorder -------------------------------------------------------------------------------------
CASES = []
STATE = {"test": None, "subtest": [], "expect_failure": 0}


class Leak(Exception):
    pass


def plain(value):
    """JSON-ready copy; raises Leak when a mock (pyxform internals) is inside."""
    if isinstance(value, mock.Mock):
        raise Leak(repr(value))
    if isinstance(value, str) and "<MagicMock" in value:
        raise Leak(re.search(r"<MagicMock name='([^']*)'", value).group(1))
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return {"$date": value.isoformat()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


EXPECTATIONS = [
    "xml__xpath_match", "xml__xpath_exact", "xml__xpath_count", "xml__contains", "xml__excludes",
    "model__contains", "model__excludes", "itext__contains", "itext__excludes", "instance__contains",
    "error__contains", "error__not_contains", "warnings__contains", "warnings__not_contains",
    "warnings_count", "errored", "name",
]


def record(args, kwargs):
    test = STATE["test"]
    params = dict(zip(["md", "ss_structure", "survey"], args))
    params.update(kwargs)
    case = {
        "module": test["module"],
        "test": test["name"],
        "subtest": "; ".join(STATE["subtest"]) or None,
        "runnable": True,
        "reason": None,
    }
    if STATE["expect_failure"]:
        case["expectAssertionFailure"] = True
    reason = None
    try:
        if params.get("md") is not None:
            case["md"] = plain(params["md"])
            case["sheets"] = md_sheets(case["md"])
        elif params.get("ss_structure") is not None:
            case["sheets"] = ss_sheets(plain(params["ss_structure"]))
        elif params.get("survey") is not None:
            reason = "built from a pyxform Survey object (pyxform's builder), not from a spreadsheet"
        else:
            reason = "no spreadsheet given"
        expect = {}
        for key in EXPECTATIONS:
            if params.get(key) is not None:
                expect[key] = plain(params[key])
        case["expect"] = expect
    except Leak as e:
        reason = f"the expectations are computed by pyxform internals ({e})"
        case.setdefault("expect", {})
    if params.get("run_odk_validate") or params.get("odk_validate_error__contains"):
        reason = "needs ODK Validate (Java)"
    if test.get("skipped"):
        reason = f"skipped in pyxform's own suite: {test['skipped']}"
    if reason:
        case["runnable"] = False
        case["reason"] = reason
    CASES.append(case)
    return mock.MagicMock(name="ConvertResult")


class PyxformTestError(Exception):
    pass


class _ExpectFailure:
    def __init__(self, *a, **k):
        pass

    def __enter__(self):
        STATE["expect_failure"] += 1
        return mock.MagicMock()

    def __exit__(self, *exc):
        STATE["expect_failure"] -= 1
        return True  # whatever the block raised, as assertRaises would have caught it


def _noop(*a, **k):
    if a and callable(a[0]) is False:
        return None
    return None


class RecordingTestCase(unittest.TestCase):
    maxDiff = None

    def assertPyxformXform(self, *args, **kwargs):
        return record(args, kwargs)

    def assertRaises(self, *a, **k):
        if len(a) > 1:  # assertRaises(exc, callable, *args)
            try:
                a[1](*a[2:], **k)
            except Exception:
                pass
            return None
        return _ExpectFailure()

    assertRaisesRegex = assertRaises

    def subTest(self, msg=None, **params):
        outer = self

        class _Sub:
            def __enter__(self):
                label = ", ".join(f"{k}={v!r}" for k, v in params.items())
                STATE["subtest"].append(" ".join(x for x in [str(msg) if msg is not None else "", label] if x))

            def __exit__(self, *exc):
                STATE["subtest"].pop()
                return False

        return _Sub()

    def __getattribute__(self, attr):
        if attr.startswith("assert") and attr not in ("assertPyxformXform", "assertRaises", "assertRaisesRegex"):
            return _noop
        if attr in ("assertWarns", "assertLogs", "assertNoLogs", "assertWarnsRegex"):
            return _ExpectFailure
        return super().__getattribute__(attr)


def install_recorder():
    mod = types.ModuleType("tests.pyxform_test_case")
    mod.PyxformTestCase = RecordingTestCase
    mod.PyxformTestError = PyxformTestError
    mod.PYXFORM_TESTS_RUN_ODK_VALIDATE = False
    mod.MatcherContext = mock.MagicMock()
    mod.reorder_attributes = _noop
    mod.xpath_evaluate = _noop
    mod.xpath_clean_result_strings = _noop
    sys.modules["tests.pyxform_test_case"] = mod


def run_module(modname, relpath):
    try:
        module = importlib.import_module(modname)
    except Exception as e:  # a module that needs pyxform at import time records nothing
        MODULE_ERRORS[relpath] = f"{type(e).__name__}: {e}"
        return
    classes = [c for _, c in inspect.getmembers(module, inspect.isclass)
               if issubclass(c, unittest.TestCase) and c.__module__ == module.__name__]
    for cls in sorted(classes, key=lambda c: c.__name__):
        if not issubclass(cls, RecordingTestCase):
            continue
        names = sorted(n for n in dir(cls) if n.startswith("test") and callable(getattr(cls, n)))
        try:
            cls.setUpClass()
        except Exception:
            pass
        for name in names:
            fn = getattr(cls, name)
            skipped = getattr(fn, "__unittest_skip_why__", None) if getattr(fn, "__unittest_skip__", False) else None
            if getattr(cls, "__unittest_skip__", False):
                skipped = getattr(cls, "__unittest_skip_why__", "skipped")
            target = getattr(fn, "__wrapped__", fn)
            STATE["test"] = {"module": relpath, "name": f"{cls.__name__}.{name}", "skipped": skipped}
            STATE["subtest"] = []
            STATE["expect_failure"] = 0
            inst = cls(name)
            try:
                inst.setUp()
                target(inst)
            except Exception as e:  # test code past the recorded calls that needs pyxform itself
                if CASES and CASES[-1]["test"] == f"{cls.__name__}.{name}":
                    pass
                else:
                    MODULE_ERRORS.setdefault(relpath + "::" + name, f"{type(e).__name__}: {str(e)[:200]}")
            finally:
                try:
                    inst.tearDown()
                except Exception:
                    pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", required=True, help="pyxform's tests directory (shared/reference/pyxform-tests)")
    ap.add_argument("--pyxform-src", required=True, help="a pyxform checkout, or its git directory")
    ap.add_argument("--rev", default="v4.5.0")
    ap.add_argument("--out", default=os.path.join(HERE, "cases.json"))
    opts = ap.parse_args()

    sys.dont_write_bytecode = True
    tmp = tempfile.mkdtemp()
    os.symlink(os.path.abspath(opts.tests), os.path.join(tmp, "tests"))
    sys.path.insert(0, tmp)
    REAL_SOURCES.update(load_pyxform_sources(opts.pyxform_src, opts.rev))
    sys.meta_path.insert(0, Finder(REAL_SOURCES))
    importlib.import_module("tests")
    install_recorder()

    files = []
    for root, _dirs, fnames in os.walk(opts.tests):
        for f in fnames:
            if f.startswith("test_") and f.endswith(".py"):
                files.append(os.path.relpath(os.path.join(root, f), opts.tests))
    for rel in sorted(files):
        modname = "tests." + rel[:-3].replace(os.sep, ".")
        run_module(modname, rel)

    # ids: module::Class.method, with #n when a test makes several calls
    counts = {}
    for c in CASES:
        key = f"{c['module']}::{c['test']}"
        counts[key] = counts.get(key, 0) + 1
    seen = {}
    for c in CASES:
        key = f"{c['module']}::{c['test']}"
        seen[key] = seen.get(key, 0) + 1
        c["id"] = key if counts[key] == 1 else f"{key}#{seen[key]}"
    out = {
        "source": "pyxform v4.5.0 tests (shared/reference/pyxform-tests), extracted by extract.py",
        "notes": dict(sorted(MODULE_ERRORS.items())),
        "cases": [{"id": c.pop("id"), **c} for c in CASES],
    }
    with open(opts.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    runnable = sum(1 for c in CASES if c["runnable"])
    print(f"{len(CASES)} cases ({runnable} runnable) → {opts.out}")
    for k, v in sorted(MODULE_ERRORS.items()):
        print(f"  note {k}: {v}")


if __name__ == "__main__":
    main()
