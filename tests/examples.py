"""Runs a code example and checks every output it states.

An example states an output in a line's trailing comment: `y = layer(x)  # (1, 4, 8)`. Where
the comment (or its part before a parenthesised note or a semicolon) is a Python literal, it is
the line's output and is asserted: a tuple of ints against the value's shape when the value has
one, numbers within the digits shown, anything else by equality. The value is the expression's,
an assignment's (its single name), or `print`'s argument; a `print` line's comment is the text it
prints where it is a literal or elides with "...". Any other comment is prose.
"""

import ast
import io
import re
import tokenize

import numpy as np


def stated_output(comment):
    """The literal a comment states, or raises ValueError when it states none."""
    text = comment.lstrip("#").strip()
    head = re.split(r"(?<!,)\s+\(|;|:\s|\s+—|,\s+(?=[a-z])", text)[0].strip()
    candidates = [text, head, head.rsplit(" = ", 1)[-1]]
    for candidate in candidates:
        try:
            return ast.literal_eval(candidate)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    raise ValueError(comment)


def _tolerance(stated):
    """Half a unit of the last digit the example shows, at the least 1e-6."""
    digits = [len(f.split(".")[1].split("e")[0]) for f in re.findall(r"\d+\.\d+(?:e-?\d+)?", repr(stated))]
    return max(0.5 * 10 ** -min(digits), 1e-6) if digits else 1e-6


def check(value, stated, line):
    """Asserts that `value` is what `line`'s comment states (`stated`)."""
    if isinstance(stated, tuple) and isinstance(value, (tuple, list)) and len(stated) == len(value) \
            and not all(isinstance(v, (int, float)) for v in stated):
        for part, want in zip(value, stated):
            check(part, want, line)
        return
    shape = getattr(value, "shape", None)
    if isinstance(stated, tuple) and stated and all(isinstance(d, int) for d in stated) and shape is not None \
            and not (isinstance(value, tuple)):
        assert tuple(shape) == stated, f"{line.strip()}\n  the example states shape {stated}, it is {tuple(shape)}"
        return
    if hasattr(value, "numpy"):
        value = value.numpy()
    numbers = np.asarray(stated, dtype=object)
    if numbers.size and all(isinstance(v, (int, float, bool)) for v in numbers.ravel()) and \
            not isinstance(stated, bool) and not any(isinstance(v, bool) for v in numbers.ravel()):
        got = np.asarray(value, dtype="float64")
        want = np.asarray(stated, dtype="float64")
        ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=_tolerance(stated))
        assert ok, f"{line.strip()}\n  the example states {stated!r}, it is {value!r}"
        return
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, bytes) and isinstance(stated, str):
        value = value.decode()
    assert value == stated, f"{line.strip()}\n  the example states {stated!r}, it is {value!r}"


def check_print(value, printed, line):
    """Asserts that what `print(value)` writes is the comment's text (or starts it, the rest a
    note); "..." at either end of the comment stands for text left out there."""
    text = str(value)

    def matches(stated):
        if "..." in stated:  # each "..." stands for text left out; spaces need not match
            pattern = r".*".join(r"\s*".join(map(re.escape, part.split())) for part in stated.split("..."))
            return re.fullmatch(pattern, text.strip(), re.S) is not None
        return " ".join(stated.split()).startswith(" ".join(text.split()))

    ok = matches(printed) or matches(re.split(r"(?<=[\])}])(?::\s|\s+\(|;)", printed)[0])  # a note after the output
    assert ok, f"{line.strip()}\n  the example states it prints {printed!r}, it prints {text!r}"


def _checked_source(source):
    """The example's source with a check after each line whose comment states an output."""
    lines = source.splitlines()
    comments = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token
    except (tokenize.TokenError, IndentationError):
        return source, 0
    checks = 0
    for number, line in enumerate(lines, 1):  # print(x) with its output on the comment lines below
        code = line.split("#")[0].rstrip() if number not in comments else ""
        below = []
        while number + len(below) < len(lines) and lines[number + len(below)].lstrip().startswith("# "):
            below.append(lines[number + len(below)].lstrip()[2:])
        try:
            call = ast.parse(code.strip()).body[0].value if below else None
        except (SyntaxError, IndexError, AttributeError):
            continue
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "print" and len(call.args) == 1
                and not call.keywords):
            continue
        indent = code[:len(code) - len(code.lstrip())]
        lines[number - 1] = (f"{indent}__value = {ast.unparse(call.args[0])}; print(__value); "
                             f"__check_print(__value, {chr(10).join(below)!r}, {line!r})")
        checks += 1
    for number, token in comments.items():
        line = lines[number - 1]
        code = line[:token.start[1]].rstrip()
        if not code.strip():
            continue
        try:
            tree = ast.parse(code.strip())
        except SyntaxError:
            continue
        try:
            stated = stated_output(token.string)
        except ValueError:
            stated = None
        first = tree.body[0]
        printing = (len(tree.body) == 1 and isinstance(first, ast.Expr) and isinstance(first.value, ast.Call)
                    and getattr(first.value.func, "id", None) == "print")
        if stated is None and not (printing and "..." in token.string):
            continue
        if len(tree.body) != 1:
            continue
        statement = tree.body[0]
        if isinstance(statement, ast.Expr):
            target = statement.value
            if isinstance(target, ast.Call) and getattr(target.func, "id", None) == "print" and len(target.args) == 1:
                value = ast.unparse(target.args[0])
                code = f"{code[:len(code) - len(code.lstrip())]}__value = {value}; print(__value)"
                printed = token.string.lstrip("#").strip()
                lines[number - 1] = f"{code}; __check_print(__value, {printed!r}, {line!r})"
                checks += 1
                continue
            else:
                code = f"{code[:len(code) - len(code.lstrip())]}__value = {code.strip()}"
        elif isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], (ast.Name, ast.Tuple)):
            code = f"{code}; __value = {ast.unparse(statement.targets[0])}"
        else:
            continue
        lines[number - 1] = f"{code}; __check(__value, {stated!r}, {line!r})"
        checks += 1
    return "\n".join(lines) + "\n", checks


def run_example(source, name):
    """Runs `source` (an example named `name`), asserting every output it states; returns how
    many outputs it checked."""
    checked, count = _checked_source(source)
    exec(compile(checked, name, "exec"), {"__check": check, "__check_print": check_print, "__name__": "__example__"})
    return count
