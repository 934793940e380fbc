"""The layer check (tools/layers/check_layers.py) on small trees made here:
it passes a tree that holds to its table and names each way it can fail."""

import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tools", "layers", "check_layers.py")

TABLE = """# test table
low    engine/low   ->
mid    engine/mid   -> low
top    ops/top      -> mid
app    app          -> *
"""


def make_tree(files, table=TABLE):
    d = tempfile.mkdtemp()
    os.makedirs(os.path.join(d, "tools", "layers"))
    with open(os.path.join(d, "tools", "layers", "layers.txt"), "w") as f:
        f.write(table)
    for path, text in files.items():
        full = os.path.join(d, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    return d


def run(root):
    p = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


CLEAN = {
    "engine/low/a.h": "#pragma once\n#include <vector>\n",
    "engine/mid/b.h": '#include "engine/low/a.h"\n',
    "engine/mid/b.cc": '#include "b.h"\n#include "engine/mid/b.h"\n',
    "ops/top/c.cc": '#include "engine/mid/b.h"\n#include "generated.h"\n',
    "app/main.cc": '#include "ops/top/c.cc"\n#include "engine/low/a.h"\n',
}


def run_with(extra):
    """The check on CLEAN plus `extra` files."""
    files = dict(CLEAN)
    files.update(extra)
    return run(make_tree(files))


class CheckLayersTest(unittest.TestCase):
    def assert_refused(self, extra, *parts):
        rc, out = run_with(extra)
        self.assertEqual(rc, 1, out)
        for part in parts:
            self.assertIn(part, out)

    def test_a_tree_that_holds_passes(self):
        rc, out = run(make_tree(CLEAN))
        self.assertEqual(rc, 0, out)
        self.assertIn("0 wrong-way includes", out)

    def test_an_include_up_the_table_is_named(self):
        self.assert_refused({"engine/low/bad.cc": '#include <cstdio>\n\n#include "engine/mid/b.h"\n'},
                            'engine/low/bad.cc:3: includes "engine/mid/b.h": layer low may not '
                            "include layer mid")

    def test_the_list_is_not_transitive(self):
        self.assert_refused({"ops/top/skip.cc": '#include "engine/low/a.h"\n'},
                            "ops/top/skip.cc:1", "(it may include: mid)")

    def test_a_local_include_resolves_to_its_own_folder(self):
        # "b.h" from engine/low is engine/low/b.h, not engine/mid/b.h.
        rc, out = run_with({"engine/low/c.h": '#include "b.h"\n', "engine/low/b.h": "#pragma once\n"})
        self.assertEqual(rc, 0, out)

    def test_a_file_in_no_layer_is_an_error(self):
        self.assert_refused({"engine/stray/d.cc": "int x;\n"},
                            "engine/stray/d.cc: in no layer of the table")

    def test_a_table_naming_a_later_layer_is_refused(self):
        table = TABLE.replace("low    engine/low   ->", "low    engine/low   -> mid")
        rc, out = run(make_tree(CLEAN, table))
        self.assertEqual(rc, 2, out)
        self.assertIn("layer 'low' may not include 'mid', which comes later", out)

    def test_the_project_holds_to_its_table(self):
        rc, out = run(ROOT)
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    unittest.main()
