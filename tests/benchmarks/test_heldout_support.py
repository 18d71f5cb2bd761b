#!/usr/bin/env python3
"""benchmarks/heldout_support.py on hand-made `leap eval` results: a task counts as solved when a
sample passes at any turn; new and lost are taken against the union of the start's evaluations;
a file that is not an evaluation stops it with its name."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "heldout_support.py")


def write_eval(folder, name, correct):
    """An evaluation whose per_task records give each task id its correct_by_turn; the family is
    recorded apart from the id (the script must read the record's, not parse the id)."""
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        json.dump({"per_task": [{"id": i, "family": "fam_" + i.split("/")[1], "correct_by_turn": c}
                                for i, c in correct.items()]}, f)
    return path


class HeldoutSupport(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.start = [
            write_eval(d, "s1.json", {"F/a/x": [1, 0, 0], "F/a/y": [0, 0, 0], "F/b/z": [0, 0, 0]}),
            # y passes only at turn 3: solved all the same
            write_eval(d, "s2.json", {"F/a/x": [0, 0, 0], "F/a/y": [0, 0, 1], "F/b/z": [0, 0, 0]}),
        ]
        self.end = [
            write_eval(d, "e1.json", {"F/a/x": [2, 0, 0], "F/a/y": [0, 0, 0], "F/b/z": [0, 1, 0]}),
            write_eval(d, "e2.json", {"F/a/x": [1, 0, 0], "F/a/y": [0, 0, 0], "F/b/z": [0, 0, 0]}),
        ]

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    def test_counts_union_new_and_lost(self):
        out = self.run_script("--start", *self.start, "--end", "rl=" + ",".join(self.end), "--format", "json")
        self.assertEqual(out.returncode, 0, out.stderr)
        r = json.loads(out.stdout)
        self.assertEqual(r["start"], {"solved": [1, 1], "union": 2, "alone": [1, 1]})
        end = r["ends"]["rl"]
        self.assertEqual((end["solved"], end["union"], end["new"], end["lost"]), ([2, 1], 2, 1, 1))
        self.assertEqual(end["new_tasks"], ["F/b/z"])
        self.assertEqual((end["new_by_family"], end["lost_by_family"]), ({"fam_b": 1}, {"fam_a": 1}))

    def test_markdown_row(self):
        out = self.run_script("--start", *self.start, "--end", "rl=" + ",".join(self.end))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("| rl | 2, 1 | 2 | 1 | 1 | fam_b 1 | fam_a 1 |", out.stdout)

    def test_a_file_that_is_no_evaluation_is_named(self):
        bad = os.path.join(self.tmp.name, "steps.json")
        with open(bad, "w") as f:
            json.dump({"steps": []}, f)
        out = self.run_script("--start", bad)
        self.assertEqual(out.returncode, 2)
        self.assertIn("steps.json: not a leap eval result", out.stderr)

    def test_a_malformed_end_is_refused(self):
        out = self.run_script("--start", *self.start, "--end", "no-files")
        self.assertEqual(out.returncode, 2)
        self.assertIn("write NAME=FILE", out.stderr)


if __name__ == "__main__":
    unittest.main()
