"""Facts read from the shape of the log's last Python traceback: where in the call chain it was raised, whatever its
exception says (bot.diagnosis.facts adds them to the job's facts)."""

from __future__ import annotations

import re2

from bot.diagnosis.curves.finding import Finding
from bot.intake.log_document import LogDocument

# A frame in a data library installed as a package (or h5py's compiled modules, named without their path)
_DATA_LIBRARY_FRAME = re2.compile(
    r'^\s*File "(?:[^"]*[/\\](?:site|dist)-packages[/\\](?:datasets|h5py|tensorflow_datasets|webdataset|pyarrow|'
    r'imageio|PIL|torch[/\\]utils[/\\]data|tensorflow[/\\]python[/\\]data|torchvision[/\\]datasets|pandas[/\\]io)'
    r'[/\\][^"]*|h5py[/\\]\w+\.pyx)", line \d+'
)
# A plain traceback's frame line, with the function it ran (none on a SyntaxError's frame); the indented line under
# it quotes the frame's source. (torchrun's [rankN]: tags are off by then: line_prefix.py)
PYTHON_FRAME = re2.compile(r'^\s*File "(?P<path>[^"]+)", line \d+(?:, in (?P<function>\S+))?')
_PLAIN_TRACEBACK = re2.compile(r"^\s*Traceback \(most recent call last\):?\s*$")
_IMPORT_STATEMENT = re2.compile(r"^\s*(?:from\s+[\w.]+\s+import\b|import\s+[\w.]+)")
_INSTALLED = re2.compile(r"[/\\](?:site|dist)-packages[/\\]")
_TRACEBACK_HEADER = b"Traceback (most recent call last)"


def traceback_cut_in_data_library(doc: LogDocument) -> Finding | None:
    """The log's last frame line, when the log ends on it (or on the source line it quotes, and Python 3.11's
    carets) in a plain traceback: one cut before its exception line (an excerpt, a process killed mid-print), in a
    data library's code. Not a loader worker's "Original Traceback" (its exception was told above it)."""
    texts = doc.texts
    i = len(texts) - 1
    if i > 0 and not texts[i].strip(" ^~"):
        i -= 1  # the carets under the quoted source
    if i > 0 and texts[i][:1].isspace() and PYTHON_FRAME.search(texts[i - 1]) and not PYTHON_FRAME.search(texts[i]):
        i -= 1  # the source line under the frame
    if i < 0 or _DATA_LIBRARY_FRAME.search(texts[i]) is None:
        return None
    head = i
    while head > 0 and (texts[head][:1].isspace() or not texts[head].strip(" ^~")):
        head -= 1  # up through the frames and their source lines to the traceback's header
    if _PLAIN_TRACEBACK.search(texts[head]) is None:
        return None
    return Finding((i,), "the log ends inside a traceback, in a data library's code")


Frame = tuple[int, str, str, str]  # a frame's line, path, function, and the source line it quotes
LastTraceback = tuple[list[Frame], int | None]  # the frames, and the exception line (None: the log ends among them)


def last_plain_traceback(doc: LogDocument) -> LastTraceback | None:
    """The frames of the log's last plain traceback and its exception line, read once for the facts below."""
    at = doc.data.rfind(_TRACEBACK_HEADER)
    if at < 0:
        return None
    texts = doc.texts
    head = doc.line_at(at)
    if _PLAIN_TRACEBACK.search(texts[head]) is None:
        return None
    frames: list[Frame] = []
    i = head + 1
    while i < len(texts):
        text = texts[i]
        frame = PYTHON_FRAME.search(text)
        if frame is not None and frame.group("function") is not None:
            after = texts[i + 1] if i + 1 < len(texts) else ""
            source = after if PYTHON_FRAME.search(after) is None else ""
            frames.append((i, frame.group("path"), frame.group("function"), source))
        elif text[:1].isspace() or not text.strip(" ^~"):
            pass  # a quoted source line, Python 3.11's carets
        else:
            return frames, i  # the exception line
        i += 1
    return frames, None


def package_failed_at_import(traceback: LastTraceback | None) -> Finding | None:
    """The log's last plain traceback, when it was raised while the program imported an installed package: its
    first frame is the program's own import statement, every frame down to the first in site-/dist-packages runs a
    module's top level (`in <module>`), and the import went on into the package's own modules. Whatever it raised
    (or where the excerpt stops), the environment's packages do not fit together: no line of training ran."""
    if traceback is None:
        return None
    frames = traceback[0]
    if len(frames) < 2 or _IMPORT_STATEMENT.search(frames[0][3]) is None:
        return None
    first_installed = next((k for k, frame in enumerate(frames) if _INSTALLED.search(frame[1])), None)
    if first_installed is None or any(frame[2] != "<module>" for frame in frames[:first_installed]):
        return None
    if not any(_INSTALLED.search(path) and function == "<module>" for _, path, function, _ in frames[first_installed:]):
        return None
    return Finding((frames[first_installed][0],), "an installed package failed while the program imported it")


# a dataset's own item, iteration and batching code, in the program or a library
_DATA_FUNCTION = re2.compile(r"^(?:__getitem__|__getitems__|__iter__|__next__|\w*collate\w*|_?next_data|fetch)$")


def raised_outside_data_code(doc: LogDocument, traceback: LastTraceback | None) -> Finding | None:
    """The log's last plain traceback ended in its exception line, and none of its frames runs a data library's code
    or a dataset's item, iteration or batching code: whatever it raised, no data was being read."""
    if traceback is None or traceback[1] is None or not traceback[0]:
        return None
    frames, raised = traceback
    texts = doc.texts
    if any(_DATA_LIBRARY_FRAME.search(texts[i]) or _DATA_FUNCTION.search(function) for i, _, function, _ in frames):
        return None
    return Finding((raised,), "the last traceback was raised outside any data-reading code")


# The exception of a path that is not there, and the frames above it in a plain or an IPython traceback: a plain
# frame names its function after "in", IPython's after the path ("File ~/x.py:12, in save(...)", "x.py in save(").
_PATH_MISSING_NAMES = (b"FileNotFoundError", b"IsADirectoryError", b"NotADirectoryError")
_PATH_MISSING = re2.compile(r"^\s*(?:[\w.]+\.)?(?:" + "|".join(n.decode() for n in _PATH_MISSING_NAMES) + r")\b")
_FRAME_FUNCTION = re2.compile(
    r'^\s*(?:File "[^"]+", line \d+, in |File \S[^\n]*:\d+, in |\S+\.pyx? in )(?:\w+\.)*(?P<f>\w+)'
)
_TRACEBACK_START = re2.compile(r"Traceback \(most recent call last\)|^-{20,}\s*$")
# what writes a file: a library's save (an image, a figure, a table, a model) or Python's open in a write mode
_WRITER = re2.compile(
    r"^(?:save|save_image|savefig|imwrite|imsave|to_csv|to_parquet|to_pickle|to_json|save_pretrained|save_checkpoint|"
    r"save_model|write_image|write_video)$"
)
_OPEN_FOR_WRITING = re2.compile(r"""\bopen\([^)\n]*,\s*(?:mode\s*=\s*)?[rb]?['"](?:w|a|x)[bt+]*['"]""")
_INNERMOST_FRAMES = 4
_FRAMES_REACH = 60  # lines read up from the exception for its innermost frames (a message with no traceback has none)


def _last_line_raising(doc: LogDocument) -> int | None:
    """The last line that raises a missing-path exception, found from the end of the log's bytes (in C): a log
    without one costs a few searches, not a pattern on every line."""
    found: int | None = None
    for name in _PATH_MISSING_NAMES:
        end = len(doc.data)
        while (at := doc.data.rfind(name, 0, end)) >= 0:
            index = doc.line_at(at)
            if found is not None and index <= found:
                break
            if _PATH_MISSING.search(doc.texts[index]) is not None:
                found = index
                break
            end = doc.starts[index]  # named mid-line (a frame, a message): look further up
    return found


def missing_path_being_written(doc: LogDocument) -> Finding | None:
    """The log's last missing-path exception (FileNotFoundError, IsADirectoryError), when one of the innermost
    frames above it writes a file (a save of an image, a figure, a table or a model; open() in a write mode): the
    path is where the program puts its output (a results folder it never created), not data it reads."""
    texts = doc.texts
    error = _last_line_raising(doc)
    if error is None:
        return None
    functions: list[str] = []
    innermost_source: list[str] = []
    i = error - 1
    top = max(error - _FRAMES_REACH, 0)
    while i >= top and len(functions) < _INNERMOST_FRAMES and not _TRACEBACK_START.search(texts[i]):
        frame = _FRAME_FUNCTION.search(texts[i])
        if frame is not None:
            functions.append(frame.group("f"))
        elif not functions:
            innermost_source.append(texts[i])  # the lines the innermost frame quotes, the raising one among them
        i -= 1
    if not functions:
        return None  # no frame above it: a message, not a traceback that says what was opened
    # IPython quotes lines around the raising one and points at it ("--> 2410"): only that one raised
    raising = [text for text in innermost_source if text.lstrip().startswith("-")] or innermost_source
    writes = any(_WRITER.search(function) for function in functions) or any(
        _OPEN_FOR_WRITING.search(text) for text in raising
    )
    return Finding((error,), "the missing path is one the program was writing to") if writes else None
