"""Writes docs/options.md, every method's options as the library's rows give
them (nle_estimator_option_info, include/nlembed/estimator.h): the tool's
--help, Python's parameters and these tables all read the same rows, so the
tables cannot say other than the code does. python/tests/test_options_doc.py
fails when the file is stale.

    PYTHONPATH=python NLEMBED_LIBRARY=build/libnlembed.so /usr/bin/python3 docs/options_md.py

rewrites it (--check: only says whether it is current, exit 1 if not)."""

import ctypes
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from nlembed import _core, _lib  # noqa: E402

OUTPUT = os.path.join(HERE, "options.md")

HEADER = """# Options of every method (generated)

Written by `docs/options_md.py` from the library's option rows
(`nle_estimator_option_info`); do not edit by hand:
`python/tests/test_options_doc.py` fails when this file is stale. Each row
is one option under one spelling: the tool's `--name` (with its short
form), the estimator's `nle_estimator_set(e, "name", ...)` and Python's
parameter (the name with `_` for `-`; the classes' scikit-learn names are
listed in `docs/python.md`). The alias is an older spelling the tool still
accepts (`no-NAME`: the switch set to false). *values* is what the library
accepts (blank: any value of the kind); `auto` means the library chooses
and reports its choice in the JSON line (`report_["options"]` in Python).
The tool's own options (files in and out, threads, seed, labels, ...) are
in `nlembed METHOD --help`.
"""


def _cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def _line(info):
    """An option's table line from its row."""
    text = _core._text
    values = text(info.values)
    if info.auto_ok and "auto" not in values.split(", ") and " auto" not in values:
        values = "auto, or " + values if values else "auto"
    short = f"`-{info.short_name.decode()}`" if info.short_name not in (b"", b"\0") else ""
    alias = f"`{text(info.alias)}`" if info.alias else ""
    default = text(info.default_text)
    return "| " + " | ".join([f"`{text(info.name)}`", short, alias, text(info.kind),
                              f"`{default}`" if default else "(none)", _cell(values),
                              _cell(_core.render_markers(text(info.help)))]) + " |"


def _rows(method):
    """The method's options, each as (name, its table line)."""
    handle = _core.Estimator(method)
    try:
        out = []
        for name in handle.options():
            info = _lib.OptionInfo()
            status = _lib.lib.nle_estimator_option_info(handle.est, name.encode(), ctypes.byref(info))
            _core.raise_for(status, handle.ctx, handle.render)
            out.append((name, _line(info)))
        return out
    finally:
        handle.close()


def _map_rows():
    """The options of the maps of new points (`nlembed transform`), each
    name once (nle_estimator_map_option, _map_option_info)."""
    lines, i = [], 0
    while True:
        name = _lib.lib.nle_estimator_map_option(i)
        if not name:
            return lines
        info = _lib.OptionInfo()
        if _lib.lib.nle_estimator_map_option_info(None, name, ctypes.byref(info)) == 0:
            lines.append(_line(info))
        i += 1


TABLE_HEAD = ["| option | short | alias | kind | default | values | what it does |",
              "| --- | --- | --- | --- | --- | --- | --- |"]


def render():
    """docs/options.md's text: the rows every method shares once, then each
    method's own (methods whose tables are the same, together)."""
    methods = _core.method_names()
    tables = {m: _rows(m) for m in methods}
    shared = [line for _, line in tables[methods[0]] if all(line in [l for _, l in tables[m]] for m in methods)]
    groups = {}  # the table's text -> its methods, in the library's order
    for m in methods:
        own = "\n".join(line for _, line in tables[m] if line not in shared)
        groups.setdefault(own, []).append(m)
    parts = [HEADER, "## Every method", "", *TABLE_HEAD, *shared, ""]
    for text, names in groups.items():
        parts += ["## " + ", ".join(f"`nlembed {m}`" for m in names), "", *TABLE_HEAD, text, ""]
    parts += ["## `nlembed transform`: the maps of new points", "",
              "Options of the maps themselves, not of the fit (`nle_estimator_set_map`); a model whose maps do not "
              "take one refuses it by name.", "", *TABLE_HEAD, *_map_rows(), ""]
    return "\n".join(parts)


def main(argv):
    text = render()
    if "--check" in argv:
        with open(OUTPUT, encoding="utf-8") as f:
            current = f.read() == text
        print(f"{OUTPUT}: {'current' if current else 'stale: run ' + __file__}")
        return 0 if current else 1
    with open(OUTPUT, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
