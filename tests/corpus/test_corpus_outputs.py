"""A corpus job's output, without a model: shards checked by their row counts and checksums (a
truncated or tampered shard is redone, or named at the join), and a finished output that
records its job (the same job finds it done; another, or a file no job wrote, is refused)."""

import json
import os

import numpy as np
import pytest

from keras_bert_lib.corpus.outputs import ShardedOutput, finished, record_path, remove

JOB = {"command": "embed", "model": "a" * 64, "inputs": ["b" * 64]}


def _rows(start, n, width=3):
    return [{"row": i, "embedding": np.full(width, i, np.float32)} for i in range(start, start + n)]


def _written(path, shards=3):
    out = ShardedOutput(path, JOB, ["row", "embedding", "error"], shard_size=4)
    for index in range(shards):
        out.write(index, _rows(4 * index, 4))
    return out


@pytest.mark.parametrize("kind", [".jsonl", ".npy", ".csv"])
def test_a_truncated_or_tampered_shard_is_redone_on_the_next_run(tmp_path, kind):
    path = str(tmp_path / f"out{kind}")
    _written(path)
    parts = tmp_path / f"out{kind}.parts"
    first, second = parts / f"part-00000{kind}", parts / f"part-00001{kind}"
    first.write_bytes(first.read_bytes()[: len(first.read_bytes()) // 2])  # truncated: a disk that lost its tail
    data = bytearray(second.read_bytes())
    data[-1] ^= 0xFF  # garbage of the same size: no reader would notice
    second.write_bytes(bytes(data))
    again = ShardedOutput(path, JOB, ["row", "embedding", "error"], shard_size=4)
    assert again.to_do(3) == [0, 1]
    for index in again.to_do(3):
        again.write(index, _rows(4 * index, 4))
    again.finish(rows=12)
    if kind == ".npy":
        np.testing.assert_array_equal(np.load(path)[:, 0], np.arange(12))
    assert finished(path, JOB) and not parts.exists()
    record = json.loads(open(record_path(path)).read())
    assert record["rows"] == 12 and record["job"] == JOB


def test_a_shard_damaged_before_the_join_is_named_and_removed_and_the_rows_are_counted(tmp_path):
    path = str(tmp_path / "out.jsonl")
    out = _written(path)
    shard = tmp_path / "out.jsonl.parts" / "part-00001.jsonl"
    shard.write_text(shard.read_text().replace("5", "6"))
    with pytest.raises(ValueError, match=r"part-00001\.jsonl is missing or damaged .* run the same command again"):
        out.finish(rows=12)
    assert not shard.exists() and not os.path.exists(path)
    out = _written(path)
    with pytest.raises(ValueError, match="holds 12 rows and the inputs 13: an input changed while the job ran"):
        out.finish(rows=13)
    out.finish(rows=12)
    assert [json.loads(line)["row"] for line in open(path)] == list(range(12))


def test_an_output_is_finished_only_for_the_job_that_wrote_it(tmp_path):
    path = str(tmp_path / "out.jsonl")
    assert finished(path, JOB) is False
    _written(path).finish(rows=12)
    assert finished(path, JOB) is True
    with pytest.raises(ValueError, match=r"holds the output of another job \(it differs in inputs, model\): pass "
                                         r"--overwrite to replace it, or write to another --output"):
        finished(path, {**JOB, "model": "c" * 64, "inputs": ["d" * 64]})
    with open(path, "a") as f:
        f.write('{"row": 12}\n')
    with pytest.raises(ValueError, match="changed after the job wrote it"):
        finished(path, JOB)
    os.remove(record_path(path))
    with pytest.raises(ValueError, match=r"exists, and no keras-bert job recorded writing it .*--overwrite"):
        finished(path, JOB)  # a file the job did not write is never taken for a finished one
    remove(path)
    assert not os.listdir(tmp_path)


def test_the_parts_of_another_job_are_not_mixed_in_and_a_damaged_job_file_is_named(tmp_path):
    path = str(tmp_path / "out.jsonl")
    _written(path, shards=1)
    with pytest.raises(ValueError, match=r"holds part of another job \(it differs in model\)"):
        ShardedOutput(path, {**JOB, "model": "c" * 64}, ["row"], shard_size=4)
    with pytest.raises(ValueError, match=r"differs in shard_size"):
        ShardedOutput(path, JOB, ["row"], shard_size=5)
    (tmp_path / "out.jsonl.parts" / "job.json").write_text("{half")
    with pytest.raises(ValueError, match=r"out\.jsonl\.parts/job\.json is damaged \(not JSON\): pass --overwrite"):
        ShardedOutput(path, JOB, ["row"], shard_size=4)
