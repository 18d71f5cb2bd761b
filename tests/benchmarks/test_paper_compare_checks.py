#!/usr/bin/env python3
"""benchmarks/paper_compare.py's checks that keep results made otherwise out of a comparison:
a stored point must record every asked setting and equal it (a legacy point without the config
hash only warns), and a run folder under --runs is used only when its recorded settings are the
asked ones (one with checkpoints and no record is refused; a fresh one gets its record)."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import paper_compare as pc  # noqa: E402


def exits(fn, *args):
    """The message fn exits with, or None when it returns."""
    try:
        fn(*args)
    except SystemExit as e:
        return str(e.code)
    return None


class CheckStored(unittest.TestCase):
    want = {"way": "leap", "seed": 1, "extra": ["--optim.lr=5e-5"], "config_sha256": "abc"}

    def test_equal_settings_pass(self):
        self.assertIsNone(exits(pc.check_stored, "p.json", dict(self.want), self.want))

    def test_another_value_is_refused_naming_it(self):
        msg = exits(pc.check_stored, "p.json", {**self.want, "extra": []}, self.want)
        self.assertIn("p.json was made with other settings (extra: stored []", msg)

    def test_an_unrecorded_setting_is_refused(self):
        stored = {k: v for k, v in self.want.items() if k != "extra"}
        msg = exits(pc.check_stored, "p.json", stored, self.want)
        self.assertIn("extra: stored '(not recorded)'", msg)

    def test_a_legacy_point_without_the_config_hash_warns(self):
        stored = {k: v for k, v in self.want.items() if k != "config_sha256"}
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertIsNone(exits(pc.check_stored, "p.json", stored, self.want))
        self.assertIn("does not record config_sha256", err.getvalue())


class RunFolder(unittest.TestCase):
    settings = {"way": "leap", "seed": 1, "extra": [], "suite": "s.jsonl"}

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.run = os.path.join(self.tmp.name, "leap-seed1")

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_new_folder_records_its_settings_and_is_then_checked(self):
        self.assertTrue(pc.check_run_folder(self.run, self.settings, False))
        with open(os.path.join(self.run, "paper_compare_run.json")) as f:
            self.assertEqual(json.load(f), self.settings)
        self.assertTrue(pc.check_run_folder(self.run, self.settings, False))
        msg = exits(pc.check_run_folder, self.run, {**self.settings, "extra": ["--optim.lr=5e-5"]}, False)
        self.assertIn("paper_compare_run.json was made with other settings", msg)

    def test_a_fresh_run_gets_its_record_before_it_trains(self):
        # The training then writes checkpoints; the folder stays usable because its record came first.
        self.assertTrue(pc.usable_run_folder(self.run, self.settings, False))
        os.makedirs(os.path.join(self.run, "checkpoints", "step_000009"))
        self.assertTrue(pc.usable_run_folder(self.run, self.settings, False))
        # A reprint elsewhere, every point stored and no run folder: nothing is made.
        other = os.path.join(self.tmp.name, "elsewhere")
        self.assertFalse(pc.usable_run_folder(other, self.settings, True))
        self.assertFalse(os.path.exists(other))

    def test_checkpoints_without_a_record_are_refused_unless_nothing_is_left_to_do(self):
        os.makedirs(os.path.join(self.run, "checkpoints", "step_000009"))
        msg = exits(pc.check_run_folder, self.run, self.settings, False)
        self.assertIn("holds checkpoints of a run whose settings are not recorded", msg)
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertFalse(pc.check_run_folder(self.run, self.settings, True))
        self.assertFalse(os.path.exists(os.path.join(self.run, "paper_compare_run.json")))


class HeldoutMarks(unittest.TestCase):
    """The audit's seen_in_train marks, written into the suite after results were stored: a stored
    subset that differs only by them is the same subset, and the clean Acc@3 leaves the marked out."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        tasks = [{"id": f"F/x/{k}", "family": "x", "split": "heldout", "prompt": str(k)} for k in range(3)]
        self.suite = os.path.join(self.tmp.name, "suite.jsonl")
        self.args = type("Args", (), {"suite": self.suite, "results": self.tmp.name, "heldout_per_family": 4})()
        self.write(tasks)  # the stored subset is written from the suite before the marks
        pc.heldout_subset(self.args)
        tasks[1]["seen_in_train"] = ["u2: made up"]
        self.tasks = tasks

    def write(self, tasks):
        with open(self.suite, "w") as f:
            f.write("".join(json.dumps(t) + "\n" for t in tasks))

    def test_a_mark_does_not_make_another_subset(self):
        self.write(self.tasks)
        self.assertIsNone(exits(pc.heldout_subset, self.args))
        self.tasks[2]["prompt"] = "changed"
        self.write(self.tasks)
        self.assertIn("holds another held-out subset", exits(pc.heldout_subset, self.args))

    def test_clean_accuracy_leaves_the_marked_tasks_out(self):
        self.write(self.tasks)
        self.assertEqual(pc.seen_in_train(self.suite), {"F/x/1"})
        report = {"overall": {"acc": [0.5, 0.5, 0.5]}, "by_family": {"x": {"acc": [0.5, 0.5, 0.5]}},
                  "per_task": [{"id": f"F/x/{k}", "acc": [a, a, a]} for k, a in enumerate((1.0, 0.0, 0.5))]}
        path = os.path.join(self.tmp.name, "eval.json")
        with open(path, "w") as f:
            json.dump(dict(report, seed=1, samples_per_task=2, turns=3, model="m"), f)
        args = type("Args", (), {"suite": self.suite, "eval_samples": 2, "eval_turns": 3})()
        got = pc.evaluate(args, "m", 1, path, os.path.join(self.tmp.name, "none.jsonl"))
        self.assertAlmostEqual(got["acc3_clean"], 0.75)
        self.assertAlmostEqual(got["acc3"], 0.5)


class FullEvalSeeds(unittest.TestCase):
    """--full-eval-seeds: the start and the end read as the mean of stored evaluations at each
    sampling seed (the run's own seed in the file it always had, the others beside it); without it,
    the run's own seed alone. A stored evaluation at another seed than its name says is refused."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.results = os.path.join(self.tmp.name, "leap-seed2")
        os.makedirs(self.results)
        self.run = os.path.join(self.tmp.name, "run")

    def store(self, path, seed, model, acc3):
        report = {"overall": {"acc": [acc3 / 2, acc3, acc3]}, "by_family": {"x": {"acc": [0, acc3, acc3]}},
                  "per_task": [{"id": "F/x/0", "acc": [0, acc3, acc3]}]}
        with open(path, "w") as f:
            json.dump(dict(report, seed=seed, samples_per_task=2, turns=3, model=model), f)

    def args(self, seeds):
        return type("Args", (), {"suite": os.path.join(self.tmp.name, "none.jsonl"), "results": self.tmp.name,
                                 "eval_samples": 2, "eval_turns": 3, "steps": 40, "model": "start",
                                 "full_eval_seeds": seeds})()

    def test_the_mean_over_sampling_seeds(self):
        ckpt = os.path.join(self.run, "checkpoints", "step_000039")
        for k, (a0, a1) in {1: (0.1, 0.2), 2: (0.3, 0.5), 3: (0.2, 0.8)}.items():
            self.store(os.path.join(self.tmp.name, f"start-seed{k}-full.json"), k, "start", a0)
            name = "eval_40_full.json" if k == 2 else f"eval_40_full-evalseed{k}.json"
            self.store(os.path.join(self.results, name), k, ckpt, a1)
        points = [{}, {}]
        pc.full_heldout(self.args([1, 2, 3]), 2, points, self.results, self.run)
        self.assertAlmostEqual(points[0]["acc3_full"], 0.2)
        self.assertAlmostEqual(points[1]["acc3_full"], 0.5)
        self.assertAlmostEqual(points[1]["acc1_full"], 0.25)
        points = [{}, {}]
        pc.full_heldout(self.args(None), 2, points, self.results, self.run)  # the run's own seed alone
        self.assertAlmostEqual(points[0]["acc3_full"], 0.3)
        self.assertAlmostEqual(points[1]["acc3_full"], 0.5)

    def test_an_evaluation_at_another_seed_is_refused(self):
        ckpt = os.path.join(self.run, "checkpoints", "step_000039")
        self.store(os.path.join(self.tmp.name, "start-seed2-full.json"), 2, "start", 0.1)
        self.store(os.path.join(self.tmp.name, "start-seed3-full.json"), 2, "start", 0.1)  # misnamed
        self.store(os.path.join(self.results, "eval_40_full.json"), 2, ckpt, 0.1)
        msg = exits(pc.full_heldout, self.args([2, 3]), 2, [{}, {}], self.results, self.run)
        self.assertIn("start-seed3-full.json was made with other settings (seed", msg)


class StoredSeeds(unittest.TestCase):
    """A seed is reported as left out of an invocation's tables and curves only when all of its
    points are stored, of a way drawn, and it was not invoked."""

    def test_finished_seeds_of_the_ways_drawn_that_were_not_invoked(self):
        with tempfile.TemporaryDirectory() as d:
            def points(tag, *steps):
                os.makedirs(os.path.join(d, tag), exist_ok=True)
                for s in steps:
                    open(os.path.join(d, tag, f"point_{s}.json"), "w").close()
            points("leap-seed1", 40, 80)       # finished, not invoked: reported
            points("leap-seed2", 40, 80)       # invoked
            points("leap-seed3", 40)           # unfinished
            points("unpruned-seed4", 40, 80)   # a way not drawn
            points("leap-seedx", 40, 80)       # not a seed folder
            self.assertEqual(pc.stored_seeds_not_invoked(d, ["leap"], [2], 80, 40), [1])
            self.assertEqual(pc.stored_seeds_not_invoked(d, ["leap", "unpruned"], [2], 80, 40), [1, 4])
            self.assertEqual(pc.stored_seeds_not_invoked(d, ["leap"], [1, 2], 80, 40), [])
            self.assertEqual(pc.stored_seeds_not_invoked(d, ["leap"], [2], 120, 40), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
