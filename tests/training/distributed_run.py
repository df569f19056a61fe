"""One short BertPretrainer run on fixed data under a named strategy; prints its per-step losses.

    python distributed_run.py STRATEGY INITIAL_WEIGHTS OUTPUT_JSON

Run as its own process because the device set-up (two logical CPUs, TF_CONFIG) must happen
before TensorFlow initialises. Dropout is off and every example has all its masked-LM weights,
so the global batch's loss is the same however it is split across replicas; gradients are
clipped at global norm 1.0, which is active here, so the test also checks that clipping sees the
summed gradient.
"""

import json
import sys

import numpy as np

STEPS, GLOBAL_BATCH, LENGTH, PREDICTIONS, VOCAB = 8, 8, 24, 4, 300


def data():
    rng = np.random.default_rng(0)
    n = 2 * GLOBAL_BATCH  # two batches, seen four times each: enough for the loss to fall
    inputs = {"token_ids": rng.integers(5, VOCAB, (n, LENGTH)).astype("int32"),
              "segment_ids": (np.arange(LENGTH) >= LENGTH // 2).astype("int32")[None].repeat(n, 0),
              "padding_mask": np.ones((n, LENGTH), "int32"),
              "masked_positions": rng.integers(1, LENGTH, (n, PREDICTIONS)).astype("int32")}
    labels = {"mlm_logits": rng.integers(5, VOCAB, (n, PREDICTIONS)).astype("int32"),
              "nsp_logits": rng.integers(0, 2, n).astype("int32")}
    weights = {"mlm_logits": np.ones((n, PREDICTIONS), "float32"), "nsp_logits": np.ones(n, "float32")}
    return inputs, labels, weights


def build():
    from keras_bert_lib import BertPretrainer, bert_tiny

    encoder = bert_tiny(vocab_size=VOCAB, num_hidden_layers=2, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, max_position_embeddings=LENGTH)
    return BertPretrainer(encoder)


def main(strategy_name, initial_weights, output):
    import tensorflow as tf

    if strategy_name == "mirrored":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from keras_bert_lib.training import create_optimizer, create_strategy, mend_fit

    strategy = create_strategy(strategy_name)
    dataset = tf.data.Dataset.from_tensor_slices(data()).batch(GLOBAL_BATCH, drop_remainder=True).repeat()
    with strategy.scope():
        model = mend_fit(build())
        model.load_weights(initial_weights)
        model.compile(optimizer=create_optimizer("adamw", 3e-3, 1, STEPS, 0.01, 1.0), jit_compile=False)
    history = model.fit(dataset, epochs=STEPS, steps_per_epoch=1, verbose=0, shuffle=False).history
    result = {"replicas": strategy.num_replicas_in_sync, "loss": history["loss"],
              "mlm_loss": history["mlm_logits_loss"], "nsp_loss": history["nsp_logits_loss"]}
    with open(output, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(*sys.argv[1:])
