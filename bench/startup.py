"""Start-up time of a fresh process: importing ml_dtypes, TensorFlow and the library, as every
`keras-bert` command that runs a model (and every worker of the test suite) does, in this
environment against the same environment with another ml_dtypes release in front of its own.

    python -m bench.startup [--ml-dtypes 0.7.0] [--rounds 7]

TensorFlow and JAX import ml_dtypes first thing, so its own import time is paid by every process
that starts either; pyproject.toml caps it below the release that made that time several times
longer. The other release is installed (from the registry, without its dependencies) into a
virtual environment under bench/.cache that reads everything else from this one. Each row is one
statement in one environment, run as `python -c` in a fresh process, wall time with the
interpreter's own start; rounds are interleaved and the table gives medians and the ratio to this
environment's.
"""

import argparse
import functools
import os
import shutil
import site
import subprocess
import sys

from packaging.version import Version

from bench.common import CACHE, cpu_model, interleaved_medians, write_results

STATEMENTS = ["import ml_dtypes", "import tensorflow", "import keras_bert_lib"]


def _environment_with(version):
    """The python of a virtual environment holding ml_dtypes `version` alone, ahead of this
    environment's packages (a .pth file lists them), made once under bench/.cache (in a folder
    of its own first, renamed when whole: a failed install leaves nothing that looks made)."""
    folder = os.path.join(CACHE, f"ml_dtypes-{version}")
    if not os.path.exists(folder):
        partial = folder + ".partial"
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", partial], check=True)
        python = os.path.join(partial, "bin", "python")
        done = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
                               f"ml_dtypes=={version}"], capture_output=True, text=True)
        if done.returncode:
            shutil.rmtree(partial)
            said = (done.stderr.strip().splitlines() or ["no message"])[-1]
            sys.exit(f"bench.startup: pip could not install ml_dtypes=={version} ({said}); name a release the "
                     "registry has with --ml-dtypes")
        purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        with open(os.path.join(purelib, "this_environment.pth"), "w", encoding="utf-8") as f:
            f.write("\n".join(site.getsitepackages()) + "\n")
        os.replace(partial, folder)
    return os.path.join(folder, "bin", "python")


def _run(python, statement):
    """`statement` in a fresh process of `python`; its output (TensorFlow's start-up notes) is
    captured, not printed."""
    subprocess.run([python, "-c", statement], env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}, check=True,
                   capture_output=True)


def _version(python):
    return subprocess.run([python, "-c", "import ml_dtypes; print(ml_dtypes.__version__)"], capture_output=True,
                          text=True, check=True).stdout.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ml-dtypes", type=Version, default="0.7.0",
                        help="the ml_dtypes release to compare with this environment's (default: 0.7.0)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default: 7)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: a median needs at least 1 round")
    here = _version(sys.executable)
    if Version(here) == args.ml_dtypes:
        parser.error(f"this environment has ml_dtypes {here} already: name another release with --ml-dtypes")
    other = _environment_with(args.ml_dtypes)
    there = _version(other)
    if Version(there) != args.ml_dtypes:  # its .pth put this environment's ml_dtypes in front
        sys.exit(f"bench.startup: {other} imports ml_dtypes {there}, not {args.ml_dtypes}; delete "
                 f"{os.path.dirname(os.path.dirname(other))} and run again")
    pythons = {f"ml_dtypes {here}": sys.executable, f"ml_dtypes {there}": other}
    variants = {(name, statement): functools.partial(_run, python, statement)
                for statement in STATEMENTS for name, python in pythons.items()}
    for run in variants.values():
        run()  # the files in the page cache
    medians = interleaved_medians(variants, args.rounds)
    ours = next(iter(pythons))
    print(f"\nfresh processes, medians of {args.rounds} interleaved rounds; {cpu_model()}")
    print(f"{'statement':24s} {'environment':18s} {'median s':>9s} {'vs ' + ours:>20s}")
    rows = []
    for (name, statement), seconds in medians.items():
        ratio = seconds / medians[(ours, statement)]
        rows.append({"statement": statement, "environment": name, "median_s": round(seconds, 3),
                     "vs_this_environment": round(ratio, 3)})
        print(f"{statement:24s} {name:18s} {seconds:9.3f} {ratio:19.2f}x")
    write_results(__file__, rows, rounds=args.rounds)


if __name__ == "__main__":
    main()
