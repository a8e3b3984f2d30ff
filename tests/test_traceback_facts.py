"""Facts read from the shape of the last Python traceback (bot.diagnosis.traceback_facts): a failure while the
program imported an installed package, a traceback cut inside a data library's code, and one raised outside any
data-reading code."""

from __future__ import annotations

from bot.diagnosis.facts import derive_facts
from bot.intake.log_document import LogDocument
from bot.intake.log_input import text_to_lines

SITE = "/opt/conda/lib/python3.10/site-packages"


def facts(text: str) -> frozenset[str]:
    return derive_facts(LogDocument(text_to_lines(text)), None)[0]


def traceback(*frames: tuple[str, str, str], error: str = "AttributeError: module 'x' has no attribute 'y'") -> str:
    lines = ["Traceback (most recent call last):"]
    for path, function, source in frames:
        lines += [f'  File "{path}", line 7, in {function}', f"    {source}"]
    return "\n".join([*lines, error]) + "\n"


ENTRY = ("/app/task.py", "<module>", "from trainer.data import load")
OWN_MODULE = ("/app/trainer/data.py", "<module>", "import datasets")
PACKAGE_INIT = (f"{SITE}/datasets/__init__.py", "<module>", "from .arrow_dataset import Dataset")
PACKAGE_CLASS = (f"{SITE}/datasets/features.py", "<module>", "class ArrayType(pa.PyExtensionType):")


def test_an_installed_package_failing_as_the_program_imports_it() -> None:
    assert "package_failed_at_import" in facts(traceback(ENTRY, OWN_MODULE, PACKAGE_INIT, PACKAGE_CLASS))
    # cut before its exception line, inside a data library: still the import, and no data was read
    cut = traceback(ENTRY, PACKAGE_INIT, (f"{SITE}/torch/utils/data/_typing.py", "__new__", "return cls"), error="")
    assert "package_failed_at_import" in facts(cut)
    assert "traceback_cut_in_data_library" not in facts(cut)


def test_not_an_import_failure() -> None:
    # the entry line calls the program's code, not an import
    call = ("/app/task.py", "<module>", "main()")
    assert "package_failed_at_import" not in facts(traceback(call, PACKAGE_INIT, PACKAGE_CLASS))
    # a function of the program's own ran before the package: the program was running, not importing
    running = ("/app/trainer/data.py", "load", "import datasets")
    assert "package_failed_at_import" not in facts(traceback(ENTRY, running, PACKAGE_INIT, PACKAGE_CLASS))
    # the import failed in the program's own module (its bug), no installed package was being imported
    own_bug = ("/app/trainer/data.py", "<module>", "COLUMNS = load_columns()")
    assert "package_failed_at_import" not in facts(traceback(ENTRY, own_bug))
    # the program's module called into a package's function at its top level: a call, not the package's import
    called = (f"{SITE}/torch/serialization.py", "load", "with _open_file_like(f) as opened:")
    assert "package_failed_at_import" not in facts(traceback(ENTRY, OWN_MODULE, called))
    # a data library's traceback cut short while running: read as one
    reading = traceback(("/app/task.py", "<module>", "main()"), (f"{SITE}/datasets/load.py", "load_dataset", "x"))
    assert "traceback_cut_in_data_library" in facts(reading.rsplit("\n", 2)[0] + "\n")


MISSING = "FileNotFoundError: [Errno 2] No such file or directory: 'out/val_images/0001.png'"


def test_a_missing_path_the_program_was_writing_to() -> None:
    saved = traceback(("/app/task.py", "save_samples", "img.save(path)"), error=MISSING)
    saved = saved.replace(", in save_samples", ", in save")  # a library's save above the exception
    assert "missing_path_being_written" in facts(saved)
    opened = traceback(("/app/task.py", "dump", 'with open(path, "w") as out:'), error=MISSING)
    assert "missing_path_being_written" in facts(opened)
    ipython = (
        "FileNotFoundError                         Traceback (most recent call last)\n"
        "/usr/lib/python3.9/site-packages/PIL/Image.py in save(self, fp, format, **params)\n"
        '-> 2410         fp = builtins.open(filename, "w+b")\n'
        f"{MISSING}\n"
    )
    assert "missing_path_being_written" in facts(ipython)


def test_a_missing_path_the_program_was_reading() -> None:
    read = traceback(ENTRY, ("/app/data.py", "load", "Image.open(p)"), error=MISSING)
    assert "missing_path_being_written" not in facts(read)
    # IPython quotes the lines around the raising one: a write two lines below the failed read is not it
    copied = (
        "FileNotFoundError                         Traceback (most recent call last)\n"
        "/usr/lib/python3.11/shutil.py in copyfile(src, dst, follow_symlinks)\n"
        "--> 256         with open(src, 'rb') as fsrc:\n"
        "    257             try:\n"
        "    258                 with open(dst, 'wb') as fdst:\n"
        f"{MISSING}\n"
    )
    assert "missing_path_being_written" not in facts(copied)
    # a message with no traceback above it: nothing says what was opened, whatever lines came before
    assert "missing_path_being_written" not in facts(f'config: open(path, "w") for logs\nstep 3\n{MISSING}\n')
    # a save further out than the innermost frames: the read inside it failed
    deep = [("/app/task.py", "save", "export(model)")] + [("/app/io.py", f"step{n}", "x = f(y)") for n in range(4)]
    assert "missing_path_being_written" not in facts(traceback(*deep, error=MISSING))


def test_an_exception_raised_outside_any_data_reading_code() -> None:
    own_bug = traceback(ENTRY, ("/app/trainer/sched.py", "build", "warmup = cfg.warmup_epochs * steps"))
    assert "raised_outside_data_code" in facts(own_bug)
    # a frame in a data library, or in a dataset's own item or batching code, reads data
    in_library = traceback(ENTRY, (f"{SITE}/torch/utils/data/dataloader.py", "__next__", "data = self._next_data()"))
    assert "raised_outside_data_code" not in facts(in_library)
    in_dataset = traceback(ENTRY, ("/app/trainer/data.py", "__getitem__", "label = self.labels[row.name]"))
    assert "raised_outside_data_code" not in facts(in_dataset)
    in_collate = traceback(ENTRY, ("/app/trainer/data.py", "pad_collate", "return torch.stack(batch)"))
    assert "raised_outside_data_code" not in facts(in_collate)
    # cut before its exception line: what it raised is not known
    assert "raised_outside_data_code" not in facts(own_bug.rsplit("\n", 2)[0] + "\n")
