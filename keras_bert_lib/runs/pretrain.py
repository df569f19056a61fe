"""The pre-training run: corpus → vocabulary → instances → dynamic masking → train → report → export.

`keras-bert pretrain [--recipe recipes/....toml]` is thin over `run_pretraining`. The defaults are
the quick-start: the standard-library corpus, a learned vocabulary and a BERT-Tiny for a few
minutes on a 2-core CPU.
"""

import dataclasses
import json
import logging
import os

from keras_bert_lib.atomic_write import atomic_write_text
from keras_bert_lib.config import PRESETS, EncoderConfig
from keras_bert_lib.data import build_pretraining_datasets
from keras_bert_lib.data.pretraining_instances import check_documents
from keras_bert_lib.file_checks import check_utf8
from keras_bert_lib.models import build_encoder, save_checkpoint, save_model_file
from keras_bert_lib.pretraining import BertPretrainer, ElectraDiscriminator, ElectraPretrainer, electra_generator
from keras_bert_lib.text import (
    BytePairTokenizer,
    SentencePieceTokenizer,
    WordPieceTokenizer,
    build_stdlib_corpus,
    learn_vocabulary,
)
from keras_bert_lib.text.subword_learners import (
    ALBERT_SPECIALS,
    ROBERTA_SPECIALS,
    learn_byte_pairs,
    learn_sentencepiece,
)
from keras_bert_lib.training.loop import LoopConfig, option, prepare_output_dir, run_lock, train, write_report

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class PretrainConfig(LoopConfig):
    """Everything a pre-training run reads; printed at start and saved as `config.json`.

    The defaults are the quick-start, sized for ten minutes on a 2-core CPU: BERT-Tiny without
    dropout, the standard-library corpus's vocabulary (an 8,000 cap; its learner stops at ~6,600
    pieces), 64-token pairs in batches of 64 (more text per pair for next-sentence prediction than
    32 tokens, at the same tokens per step), 20 dupes (fresh pairs, so NSP does not memorise),
    2,200 steps at 2e-3 (docs/pretraining.md has the sweep behind these numbers). A real run sets
    `corpus`, `preset`, `dropout` 0.1, `max_seq_length` 128/512, `max_predictions` 20/80,
    `batch_size` 256, `steps` 1,000,000 and `learning_rate` 1e-4 (BERT's).

    Example:
        ```python
        from keras_bert_lib.runs import PretrainConfig
        config = PretrainConfig(steps=200, steps_per_epoch=100, batch_size=16)
        ```
    """

    output_dir: str = option("runs/quickstart", "folder for the config, vocabulary, checkpoints, logs, "
                                                "curves, report and the exported encoder")
    steps: int = option(2200, "optimizer steps in all (the paper: 1,000,000)")
    steps_per_epoch: int = option(440, "steps between backups (for resuming), held-out evaluations and "
                                       "points on the curves; must divide steps")
    learning_rate: float = option(2e-3, "peak learning rate (the paper: 1e-4 at batch 256)", within="(0, inf)")
    corpus: list = option([], "corpus files: one sentence a line, a blank line between documents "
                              "(Google's format), or .jsonl with a 'text' field; none: Python's "
                              "standard-library docstrings", input_path=True)
    vocab: str | None = option(None, "a vocab.txt (BERT), spiece.model (ALBERT) or vocab.json with merges.txt "
                                     "beside it (RoBERTa) to use; 'none': learn the preset family's on the corpus",
                               input_path=True)
    vocab_size: int = option(8000, "largest vocabulary to learn (WordPiece, SentencePiece or byte-level BPE, as "
                                   "the preset's family)")
    lowercase: bool = option(True, "uncased: lower-case and strip accents")
    preset: str = option("bert_tiny", "encoder shape", choices=tuple(PRESETS))
    dropout: float | None = option(0.0, "hidden and attention dropout; 'none': the preset's (BERT: 0.1)",
                                   within="[0, 1)")
    attention_dropout: float | None = option(None, "attention-probability dropout alone ('none': as --dropout); "
                                                   "0 lets training steps run fused attention kernels on GPUs",
                                             within="[0, 1)")
    objective: str = option("mlm", "'mlm': masked LM (with --sentence-task); 'rtd': ELECTRA's replaced-token "
                                   "detection, a generator 1/4 the preset's width and the preset as discriminator "
                                   "(with --sentence-task none)", choices=("mlm", "rtd"))
    sentence_task: str | None = option("nsp", "next-sentence (BERT) or sentence-order (ALBERT) prediction; 'none': "
                                              "masked LM alone, one segment of whole sentences (RoBERTa's; the "
                                              "presets without a pooler, and --objective rtd)",
                                       choices=("nsp", "sop", None))
    max_seq_length: int = option(64, "tokens per instance, [CLS] and [SEP]s included", within="[5, inf)")
    max_predictions: int = option(10, "masked positions per instance (P)")
    masked_lm_prob: float = option(0.15, "share of tokens chosen for masked LM", within="(0, 1]")
    short_seq_prob: float = option(0.1, "share of instances cut shorter than max_seq_length", within="[0, 1]")
    dupe_factor: int = option(20, "times each document is cut into instances, each time anew")
    whole_word_masking: bool = option(False, "mask every piece of a chosen word")
    max_ngram: int = option(1, "mask n-grams up to this n, P(n) ~ 1/n (ALBERT: 3)")
    masking: str = option("dynamic", "'dynamic': a new mask each time an instance is read; 'static': "
                                     "masked once per dupe and written as TFRecords", choices=("dynamic", "static"))
    num_shards: int = option(4, "static masking's TFRecord shards")
    compression: str | None = option(None, "static masking's TFRecord compression",
                                     choices=(None, "GZIP", "ZLIB"))
    batch_size: int = option(64, "instances per step (the paper: 256)")
    eval_fraction: float = option(0.05, "share of documents held out for evaluation", within="(0, 1)")
    init_checkpoint: str | None = option(None, "a pretrainer's .weights.h5 to start from (a later phase)",
                                         input_path=True)
    # The paper's schedule (Devlin et al., 2019, Appendix A.2):
    #   [{"max_seq_length": 128, "max_predictions": 20, "steps": 900000},
    #    {"max_seq_length": 512, "max_predictions": 80, "steps": 100000}]
    phases: list = option([], "phases run one after another, each a dict of overrides starting "
                              "from the weights the one before ended with, in output_dir/phase1, ...")

    def __post_init__(self):
        super().__post_init__()
        if self.max_ngram < 1 or self.dupe_factor < 1:
            raise ValueError("max_ngram and dupe_factor must be at least 1.")
        # Before a vocabulary is learned for nothing:
        if self.sentence_task and (self.objective == "rtd" or not PRESETS[self.preset].with_pooler):
            why = ("--objective rtd learns from every token, without a sentence task" if self.objective == "rtd"
                   else f"--preset {self.preset} has no pooler, so it cannot learn {self.sentence_task.upper()}")
            raise ValueError(f"{why}: pass --sentence-task none.")
        preset = PRESETS[self.preset]
        if self.objective == "rtd" and (not isinstance(preset, EncoderConfig) or preset.num_hidden_groups is not None
                                        or preset.position_offset or not preset.type_vocab_size):
            raise ValueError(f"--objective rtd trains an ELECTRA discriminator of BERT's shape; --preset "
                             f"{self.preset} is not (ALBERT, RoBERTa, DistilBERT, ModernBERT or DeBERTa-v3): use "
                             "electra_small, electra_base, electra_large or a BERT preset.")
        bad = [p for p in self.phases if not isinstance(p, dict) or set(p) - {f.name for f in dataclasses.fields(self)}]
        if bad:
            raise ValueError(f"phases must be dicts of PretrainConfig fields; these are not: {bad}.")


def run_pretraining(config: PretrainConfig):
    """Pre-trains a BertPretrainer as `config` says; returns the held-out report (a dict).

    Resumable: killed and started again with the same config, it continues from its last
    epoch's backup. A finished run is not trained again (its report is returned) unless
    `overwrite=True`; an output_dir that holds a run with other settings is refused. At the end it
    writes `report.json`, `curves.png`, TensorBoard logs, the pretrainer as `pretrainer.keras`
    and the encoder in HuggingFace format, with its `vocab.txt`, under `export/`.

    Raises:
        ValueError: a corpus or vocabulary file that does not exist (before anything is
            written), or an output_dir that holds a run with other settings.
    Example:
        ```python
        from keras_bert_lib.runs import PretrainConfig, run_pretraining
        # run_pretraining(PretrainConfig(steps=100, steps_per_epoch=50))   # minutes; the README's main job
        ```
    """
    vocab = [config.vocab] if config.vocab else []
    if config.vocab and config.vocab.endswith(".json"):  # byte-level BPE: its merges.txt beside it
        vocab.append(os.path.join(os.path.dirname(config.vocab), "merges.txt"))
    missing = [p for p in [*config.corpus, *vocab] if not os.path.isfile(p)]
    if missing:
        raise ValueError(f"No such file: {', '.join(missing)}. Nothing was written.")
    # Text files are checked before anything is written (a SentencePiece .model is binary).
    check_utf8([*config.corpus, *(v for v in vocab if not v.endswith(".model"))])
    if config.corpus:  # the built-in corpus (none given) holds thousands
        check_documents(config.corpus, config.eval_fraction)
    with run_lock(config.output_dir):
        return _pretrain(config)


def _pretrain(config):
    finished = prepare_output_dir(config)
    if finished is not None:
        return finished
    if config.phases:
        return _run_phases(config)
    import keras

    keras.utils.set_random_seed(config.seed)
    files = config.corpus or [build_stdlib_corpus()]
    tokenizer = _tokenizer(config, files)
    data = build_pretraining_datasets(
        files, tokenizer, max_seq_length=config.max_seq_length, max_predictions=config.max_predictions,
        masked_lm_prob=config.masked_lm_prob, short_seq_prob=config.short_seq_prob,
        dupe_factor=config.dupe_factor, sentence_task=config.sentence_task,
        whole_word_masking=config.whole_word_masking, max_ngram=config.max_ngram,
        batch_size=config.batch_size, eval_fraction=config.eval_fraction, seed=config.seed,
        static_records=(os.path.join(config.output_dir, "pretraining_data") if config.masking == "static" else None),
        num_shards=config.num_shards, compression=config.compression)

    def build():
        shape = encoder_config(config, tokenizer.vocabulary_size())
        if shape.family == "modernbert":  # its config.json names the padding id transformers' embedding skips
            shape = shape.replace(pad_token_id=tokenizer.pad_id)
        if config.objective == "rtd":  # ELECTRA: the preset as discriminator, a narrower generator on its embeddings
            discriminator = ElectraDiscriminator(build_encoder(shape.replace(with_pooler=False, family="electra"),
                                                               dtype=config.dtype))
            pretrainer = ElectraPretrainer(electra_generator(discriminator, dtype=config.dtype), discriminator,
                                           seed=config.seed)
        else:
            pretrainer = BertPretrainer(build_encoder(shape, dtype=config.dtype), sentence_task=config.sentence_task)
        if config.init_checkpoint:
            try:
                pretrainer.load_weights(config.init_checkpoint)
            except (ValueError, FileNotFoundError) as e:
                raise ValueError(
                    f"init_checkpoint {config.init_checkpoint} does not fit this pretrainer (preset "
                    f"{config.preset}, {tokenizer.vocabulary_size()} tokens, {config.sentence_task}): use "
                    f"the preset, vocabulary and sentence task of the run that wrote it. Keras said: {e}") from None
        return pretrainer

    baselines = {"most-frequent-token": data.baselines["mlm_most_frequent_token"]}
    if config.sentence_task:
        baselines["always IsNext"] = data.baselines["nsp_always_is_next"]
    pretrainer, held_out = train(config, build, data.train, data.held_out, baselines=baselines)
    report = {"held_out": held_out, "baselines": data.baselines, **data.stats,
              "steps": int(pretrainer.optimizer.iterations.numpy())}
    save_model_file(pretrainer, os.path.join(config.output_dir, "pretrainer.keras"))
    partial = os.path.join(config.output_dir, ".partial-pretrainer.weights.h5")  # a later phase starts from it
    pretrainer.save_weights(partial)
    os.replace(partial, os.path.join(config.output_dir, "pretrainer.weights.h5"))
    if config.dtype == "float32":
        export = os.path.join(config.output_dir, "export")
        if config.objective == "rtd":  # the discriminator (what one fine-tunes), its generator beside
            save_checkpoint(pretrainer.discriminator, export, format="hf")
            save_checkpoint(pretrainer.generator, os.path.join(export, "generator"), format="hf")
        else:
            save_checkpoint(pretrainer, export, format="hf")
        tokenizer.save_assets(export)  # vocab.txt, spiece.model, or vocab.json + merges.txt
        settings = {"bert": {"do_lower_case": config.lowercase, "tokenizer_class": "BertTokenizer"},
                    "albert": {"do_lower_case": config.lowercase, "keep_accents": not config.lowercase,
                               "tokenizer_class": "AlbertTokenizer"},
                    "roberta": {"add_prefix_space": True, "tokenizer_class": "RobertaTokenizer"}}
        atomic_write_text(os.path.join(export, "tokenizer_config.json"), json.dumps(settings[_family(config.preset)]))
    write_report(config.output_dir, report)
    return report


def _family(preset):
    """The preset's family decides its vocabulary: SentencePiece for ALBERT, byte-level BPE for
    RoBERTa and ModernBERT, WordPiece for the rest (BERT, DistilBERT, ELECTRA)."""
    if preset.startswith("albert"):
        return "albert"
    return "roberta" if preset.startswith(("roberta", "modernbert")) else "bert"


def _vocabulary_file(config):
    """Where the run's learned vocabulary lives: vocab.txt, spiece.model or vocab.json (+ merges.txt)."""
    name = {"albert": "spiece.model", "roberta": "vocab.json", "bert": "vocab.txt"}[_family(config.preset)]
    return os.path.join(config.output_dir, name)


def _tokenizer(config, files):
    """The run's tokenizer: from --vocab (vocab.txt, a SentencePiece .model, or vocab.json with its
    merges.txt beside), else the one learned on the corpus (a resumed run keeps the vocabulary
    its weights were trained with)."""
    path = config.vocab or _vocabulary_file(config)
    if path.endswith(".model"):
        if not os.path.isfile(path):
            logger.info("Learning a SentencePiece vocabulary of %d pieces on %s", config.vocab_size, files)
            return learn_sentencepiece(files, config.vocab_size, path, lowercase=config.lowercase)
        return SentencePieceTokenizer(path, lowercase=config.lowercase, strip_accents=config.lowercase,
                                      albert_quotes=True, special_tokens=ALBERT_SPECIALS)
    if path.endswith(".json"):
        if not os.path.isfile(path):
            logger.info("Learning a byte-level BPE vocabulary of %d tokens on %s", config.vocab_size, files)
            return learn_byte_pairs(files, config.vocab_size, config.output_dir)
        return BytePairTokenizer(path, os.path.join(os.path.dirname(path), "merges.txt"), add_prefix_space=True,
                                 special_tokens=ROBERTA_SPECIALS)
    if not os.path.isfile(path):
        logger.info("Learning a vocabulary of at most %d tokens on %s", config.vocab_size, files)
        learn_vocabulary(files, config.vocab_size, config.lowercase, output=path)
    return WordPieceTokenizer(path, lowercase=config.lowercase)


def _run_phases(config):
    """Each phase in its own folder, on the first phase's vocabulary, from the last one's weights.
    A phase that finished (its report.json exists) is not run again when the command is."""
    reports, init, vocab = [], config.init_checkpoint, config.vocab
    for i, overrides in enumerate(config.phases, 1):
        phase = dataclasses.replace(config, **{"init_checkpoint": init, "vocab": vocab, **overrides,
                                               "phases": [], "overwrite": False,
                                               "output_dir": os.path.join(config.output_dir, f"phase{i}")})
        reports.append(run_pretraining(phase))
        init = os.path.join(phase.output_dir, "pretrainer.weights.h5")
        vocab = vocab or _vocabulary_file(phase)
    report = {**reports[-1], "phases": reports}
    write_report(config.output_dir, report)
    return report


def encoder_config(config, vocab_size):
    """The preset's config with the run's vocabulary size and dropout (ModernBERT's three dropouts:
    embeddings, attention and the GeGLU's, for BERT's hidden and attention dropout).

    Example:
        ```python
        from keras_bert_lib.runs import PretrainConfig
        from keras_bert_lib.runs.pretrain import encoder_config
        encoder_config(PretrainConfig(), vocab_size=6644).vocab_size   # 6644
        ```
    """
    preset = PRESETS[config.preset]
    hidden, attention = ("hidden_dropout_prob", "attention_probs_dropout_prob") if preset.family != "modernbert" \
        else ("embedding_dropout", "attention_dropout")
    changes = {"vocab_size": vocab_size}
    if config.dropout is not None:
        changes.update({hidden: config.dropout, attention: config.dropout})
        if preset.family == "modernbert":
            changes["mlp_dropout"] = config.dropout
    if config.attention_dropout is not None:
        changes[attention] = config.attention_dropout
    return preset.replace(**changes)
