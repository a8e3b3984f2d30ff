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
_ANY_FRAME = re2.compile(r'^\s*File "[^"]+", line \d+')  # (torchrun's [rankN]: tags are off: line_prefix.py)
_FRAME = re2.compile(r'^\s*File "(?P<path>[^"]+)", line \d+, in (?P<function>\S+)')
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
    if i > 0 and texts[i][:1].isspace() and _ANY_FRAME.search(texts[i - 1]) and not _ANY_FRAME.search(texts[i]):
        i -= 1  # the source line under the frame
    if i < 0 or _DATA_LIBRARY_FRAME.search(texts[i]) is None:
        return None
    head = i
    while head > 0 and (texts[head][:1].isspace() or not texts[head].strip(" ^~")):
        head -= 1  # up through the frames and their source lines to the traceback's header
    if _PLAIN_TRACEBACK.search(texts[head]) is None:
        return None
    return Finding((i,), "the log ends inside a traceback, in a data library's code")


def package_failed_at_import(doc: LogDocument) -> Finding | None:
    """The log's last plain traceback, when it was raised while the program imported an installed package: its
    first frame is the program's own import statement, every frame down to the first in site-/dist-packages runs a
    module's top level (`in <module>`), and the import went on into the package's own modules. Whatever it raised
    (or where the excerpt stops), the environment's packages do not fit together: no line of training ran."""
    at = doc.data.rfind(_TRACEBACK_HEADER)
    if at < 0:
        return None
    texts = doc.texts
    head = doc.line_at(at)
    if _PLAIN_TRACEBACK.search(texts[head]) is None:
        return None
    frames: list[tuple[int, str, str, str]] = []  # line, path, function, the source line it quotes
    i = head + 1
    while i < len(texts):
        text = texts[i]
        frame = _FRAME.search(text)
        if frame is not None:
            after = texts[i + 1] if i + 1 < len(texts) else ""
            source = after if _ANY_FRAME.search(after) is None else ""
            frames.append((i, frame.group("path"), frame.group("function"), source))
        elif text[:1].isspace() or not text.strip(" ^~"):
            pass  # a quoted source line, Python 3.11's carets
        else:
            break  # the exception line
        i += 1
    if len(frames) < 2 or _IMPORT_STATEMENT.search(frames[0][3]) is None:
        return None
    first_installed = next((k for k, frame in enumerate(frames) if _INSTALLED.search(frame[1])), None)
    if first_installed is None or any(frame[2] != "<module>" for frame in frames[:first_installed]):
        return None
    if not any(_INSTALLED.search(path) and function == "<module>" for _, path, function, _ in frames[first_installed:]):
        return None
    return Finding((frames[first_installed][0],), "an installed package failed while the program imported it")
