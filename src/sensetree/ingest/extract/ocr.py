"""OCR for pages without a text layer and for image files.

The default engine is RapidOCR (PP-OCRv6 small detection and recognition models,
ONNX, shipped inside the `rapidocr` wheel: nothing is downloaded; Latin-script
languages with their accents, Chinese and Japanese). Where Debian's Tesseract is
installed, ``engine="tesseract"`` uses it instead, with ``languages`` in
Tesseract's codes (``("rus", "eng")``), for the scripts the bundled model lacks.

Each page is read in a worker process, under a time limit and a memory limit: a
page that runs past either has its worker killed (a fresh one starts for the next
page) and fails alone, with a one-line reason; the rest of the file is still
indexed. One `Ocr` serves any number of threads, one page at a time.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from ...errors import SenseTreeError
from .base import Job, OcrSettings, reason

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from PIL.Image import Image

MAX_PIXELS = 12_000_000
"""Pages are scaled down to at most this many pixels before OCR (A4 at 300 dpi is 8.7 million)."""

STARTUP_TIMEOUT = 180.0
"""Seconds the worker may take to load its models (not counted in any page's time limit)."""

MIN_SIDE = 24
"""Images narrower or lower than this hold no readable line of text (icons, spacers)."""


class OcrFailed(SenseTreeError):
    """One page could not be read; `str(err)` says why, in one line."""

    seconds: float = 0.0  # spent on the page before it failed


def tesseract_languages() -> tuple[str, ...]:
    """The languages an installed Tesseract has models for; () when it is not installed."""
    if shutil.which("tesseract") is None:
        return ()
    listing = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True, timeout=30, check=False)
    return tuple(line.strip() for line in listing.stdout.splitlines()[1:] if line.strip() and line.strip() != "osd")


class Ocr:
    """Reads the text of page images, one page at a time, each under the time and memory limits."""

    def __init__(self, settings: OcrSettings | None = None) -> None:
        self.settings = settings or OcrSettings()
        if self.settings.engine not in ENGINES:
            raise ValueError(f"unknown OCR engine {self.settings.engine!r}: {' or '.join(ENGINES)}")
        self._lock = threading.Lock()
        self._engine = ENGINES[self.settings.engine](self.settings)

    def read(self, image: Image) -> str:
        """The text of ``image``, in reading order; raises `OcrFailed` for a page that cannot be read."""
        return self.timed_read(image)[0]

    def timed_read(self, image: Image) -> tuple[str, float]:
        """`read`, and the seconds the engine spent on the page (not counting the wait for another thread's)."""
        page = prepare(image)
        if page is None:
            return "", 0.0
        with self._lock:
            started = time.perf_counter()
            try:
                return self._engine.read(page), time.perf_counter() - started
            except OcrFailed as exc:
                exc.seconds = time.perf_counter() - started
                raise

    @property
    def worker_pid(self) -> int | None:
        """The process id of the engine's worker while one runs (for measurements)."""
        return self._engine.worker_pid

    def close(self) -> None:
        with self._lock:
            self._engine.stop()

    def __enter__(self) -> Ocr:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Engine(Protocol):
    """One OCR engine: a page's text, read under the settings' time and memory limits."""

    @property
    def worker_pid(self) -> int | None:
        """The process that reads the pages while it runs, else None."""
        ...

    def read(self, page: Image) -> str:
        """The page's text; raises ``OcrFailed`` for a page it cannot read."""
        ...

    def stop(self) -> None: ...


class _RapidOcr:
    """The bundled engine, in a worker process that holds its models; a worker that failed (killed
    for time or memory, broken) is replaced for the next page."""

    def __init__(self, settings: OcrSettings):
        self.settings = settings
        self._worker: _Worker | None = None

    @property
    def worker_pid(self) -> int | None:
        worker = self._worker
        return worker._process.pid if worker is not None and worker.alive() else None

    def read(self, page: Image) -> str:
        if self._worker is None or not self._worker.alive():
            self._worker = _Worker(self.settings)
        try:
            return self._worker.read(page)
        except OcrFailed:
            self.stop()
            raise

    def stop(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None


class _Tesseract:
    """An installed Tesseract, one process per page."""

    worker_pid: int | None = None  # one process per page, none kept

    def __init__(self, settings: OcrSettings):
        self.settings = settings

    def read(self, page: Image) -> str:
        return _tesseract(page, self.settings)

    def stop(self) -> None:
        pass


# indexing.ocr_engine -> the engine
ENGINES: dict[str, Callable[[OcrSettings], _Engine]] = {"rapidocr": _RapidOcr, "tesseract": _Tesseract}


def ocr_page(job: Job, image: Image, where: str) -> str:
    """OCR one page for a reader: counts it in ``job``, and turns a failure into a note and no text."""
    assert job.ocr is not None
    if min(image.size) < MIN_SIDE:
        return ""
    if job.ocr_pages >= job.ocr.settings.max_pages:
        stopped = f"OCR stopped after {job.ocr_pages} pages (indexing.ocr_max_pages)"
        if stopped not in job.notes:
            job.notes.append(stopped)
        return ""
    job.ocr_pages += 1
    try:
        text, seconds = job.ocr.timed_read(image)
    except OcrFailed as exc:
        job.notes.append(f"{where}: {exc}")
        job.ocr_seconds += exc.seconds
        return ""
    job.ocr_seconds += seconds
    return text


def prepare(image: Image) -> Image | None:
    """Grayscale, at most MAX_PIXELS; None for an image too small to hold a line of text."""
    from PIL import Image as PILImage

    if min(image.size) < MIN_SIDE:
        return None
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        # Transparent areas are usually meant to be paper: flatten onto white, not black.
        rgba = image.convert("RGBA")
        backdrop = PILImage.new("RGBA", rgba.size, "white")
        image = PILImage.alpha_composite(backdrop, rgba)
    image = image.convert("L")
    pixels = image.width * image.height
    if pixels > MAX_PIXELS:
        scale = (MAX_PIXELS / pixels) ** 0.5
        image = image.resize(
            (max(1, int(image.width * scale)), max(1, int(image.height * scale))), PILImage.Resampling.LANCZOS
        )
    return image


# --- the RapidOCR worker process ---------------------------------------------------------------


class _Worker:
    """A child process holding the RapidOCR models; killed when a page takes too long or too much memory.

    It is started as ``python -m sensetree.ingest.extract.ocr_worker`` with two pipes, rather than
    by multiprocessing, so that it neither forks a process full of threads nor re-runs the
    caller's main module.
    """

    def __init__(self, settings: OcrSettings) -> None:
        self.settings = settings
        package_root = str(Path(__file__).resolve().parents[3])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
        command = [sys.executable, "-m", f"{__package__}.ocr_worker"]
        self._process, self._requests, self._replies = _start_worker(
            command, [str(settings.threads), settings.device], env
        )
        self._ready = False

    def alive(self) -> bool:
        return self._process.poll() is None

    def read(self, page: Image) -> str:
        if not self._ready:  # the first page waits for the models to load, outside its own time limit
            self._reply(STARTUP_TIMEOUT, "to start")
            self._ready = True
        try:
            self._requests.send((page.width, page.height, page.tobytes()))
        except OSError:
            raise OcrFailed("the OCR engine stopped unexpectedly") from None
        status, value = self._reply(self.settings.page_timeout, "")
        if status != "ok":
            raise OcrFailed(f"OCR failed: {value}")
        return value

    def _reply(self, timeout: float, what: str) -> tuple[str, str]:
        """The worker's next message, watching its time and memory meanwhile."""
        deadline = time.monotonic() + timeout
        try:
            while not self._replies.poll(0.2):
                if not self.alive():
                    raise OcrFailed("the OCR engine stopped unexpectedly")
                if time.monotonic() > deadline:
                    raise OcrFailed(f"OCR took longer than {timeout:g} s{' ' + what if what else ''}")
                if _resident_bytes(self._process.pid) > self.settings.max_memory:
                    raise OcrFailed(f"OCR needed more than {self.settings.max_memory / 2**20:.0f} MB")
            return self._replies.recv()
        except (EOFError, OSError):
            raise OcrFailed("the OCR engine stopped unexpectedly") from None

    def stop(self) -> None:
        for connection in (self._requests, self._replies):
            with contextlib.suppress(OSError):
                connection.close()
        if self.alive():
            self._process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=10)


def _start_worker(command: list[str], options: list[str], env: dict) -> tuple[subprocess.Popen, Connection, Connection]:
    """The worker process and its (requests, replies) connections: on POSIX two pipes whose child ends it
    inherits by number; on Windows, which cannot pass file descriptors, one duplex pipe's handle."""
    from multiprocessing.connection import Connection

    if os.name == "nt":
        return _start_with_handle(command, options, env)
    request_read, request_write = os.pipe()
    reply_read, reply_write = os.pipe()
    try:
        process = subprocess.Popen(
            [*command, "fds", str(request_read), str(reply_write), *options],
            pass_fds=(request_read, reply_write),
            stdin=subprocess.DEVNULL,
            env=env,
        )
    finally:
        os.close(request_read)
        os.close(reply_write)
    return process, Connection(request_write, readable=False), Connection(reply_read, writable=False)


def _start_with_handle(
    command: list[str], options: list[str], env: dict
) -> tuple[subprocess.Popen, Connection, Connection]:
    """Windows: one duplex named pipe (multiprocessing's), its child end inherited as a handle."""
    if sys.platform != "win32":  # only called there; the test also tells a type checker which stubs apply
        raise OSError("a handle is inherited on Windows only")
    import multiprocessing

    ours, theirs = multiprocessing.Pipe(duplex=True)
    handle = theirs.fileno()
    os.set_handle_inheritable(handle, True)
    startupinfo = subprocess.STARTUPINFO(lpAttributeList={"handle_list": [handle]})
    try:
        process = subprocess.Popen(
            [*command, "handle", str(handle), *options], startupinfo=startupinfo, stdin=subprocess.DEVNULL, env=env
        )
    finally:
        theirs.close()
    return process, ours, ours


def _resident_bytes(pid: int | None) -> int:
    """The process's resident memory (Linux); 0 where /proc does not say."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def serve(requests: Connection, replies: Connection, threads: int, device: str = "cpu") -> None:
    """The worker's loop: (width, height, grayscale bytes) in, ("ok", text) or ("error", reason) out.

    A page that fails on an accelerator is read again on the CPU, which reads the rest from then on."""
    import numpy as np

    accelerator = ocr_accelerator(device)
    engine = _rapidocr(threads, accelerator)
    replies.send(("ready", ""))
    while True:
        try:
            width, height, pixels = requests.recv()
        except (EOFError, OSError):
            return
        try:
            gray = np.frombuffer(pixels, dtype=np.uint8).reshape(height, width)
            image = np.repeat(gray[:, :, None], 3, axis=2)
            try:
                result = engine(image)
            except Exception:
                if accelerator is None:
                    raise
                engine, accelerator = _rapidocr(threads, None), None
                result = engine(image)
            lines = list(zip(result.boxes, result.txts)) if result.boxes is not None else []
            replies.send(("ok", layout(lines)))
        except Exception as exc:  # the engine raises anything on odd input; the page fails alone
            replies.send(("error", reason(exc)))


def ocr_accelerator(requested: str, available: Sequence[str] | None = None) -> str | None:
    """The accelerator RapidOCR runs on for the setting (cuda, directml, coreml), or None for the CPU."""
    from ...models.devices import accelerators_to_try, available_providers

    devices, _ = accelerators_to_try(requested, available_providers() if available is None else available, "ocr")
    return devices[0] if devices else None


RAPIDOCR_DEVICES = {"cuda": "use_cuda", "directml": "use_dml", "coreml": "use_coreml"}  # its onnxruntime flags


def _rapidocr(threads: int, accelerator: str | None = None):
    """RapidOCR on its bundled models, named by path so that it can never try to download one."""
    from rapidocr import RapidOCR

    package = sys.modules["rapidocr"].__file__
    if package is None:  # a namespace package: not an installed rapidocr
        raise ImportError("rapidocr has no folder of its own to hold its models")
    models = Path(package).parent / "models"
    return RapidOCR(
        params={
            "Global.log_level": "critical",
            "Global.use_cls": False,  # upside-down lines are rare in documents, and the check costs time
            # Lines are found on the page scaled to 1600 pixels (enough for 8-point text on A4, and
            # a third of the time at full size), then read at full resolution (the default would
            # first shrink a 300 dpi page to 2000 pixels).
            "Global.max_side_len": 4000,
            "Det.limit_type": "max",
            "Det.limit_side_len": 1600,
            "Det.model_path": str(models / "PP-OCRv6_det_small.onnx"),
            "Rec.model_path": str(models / "PP-OCRv6_rec_small.onnx"),
            "Cls.model_path": str(models / "ch_ppocr_mobile_v2.0_cls_mobile.onnx"),
            "EngineConfig.onnxruntime.intra_op_num_threads": threads,
            "EngineConfig.onnxruntime.inter_op_num_threads": 1,
            **({f"EngineConfig.onnxruntime.{RAPIDOCR_DEVICES[accelerator]}": True} if accelerator else {}),
        }
    )


def layout(lines: Sequence[tuple[Sequence[Sequence[float]], str]]) -> str:
    """Text boxes (four corners, text) as lines and paragraphs.

    Boxes whose vertical middles fall within half a line of each other make one line, left
    to right; a gap of more than about one line's height between lines starts a paragraph.
    """
    boxes = []
    for corners, text in lines:
        if not text.strip():
            continue
        ys = [point[1] for point in corners]
        xs = [point[0] for point in corners]
        boxes.append((min(ys), max(ys), min(xs), text.strip()))
    boxes.sort()
    rows: list[list[tuple[float, float, float, str]]] = []
    for box in boxes:
        middle = (box[0] + box[1]) / 2
        if rows:
            top, bottom = min(b[0] for b in rows[-1]), max(b[1] for b in rows[-1])
            if abs(middle - (top + bottom) / 2) < (bottom - top) / 2:
                rows[-1].append(box)
                continue
        rows.append([box])
    out: list[str] = []
    previous_bottom, heights = None, sorted(max(b[1] for b in row) - min(b[0] for b in row) for row in rows)
    line_height = heights[len(heights) // 2] if heights else 0
    for row in rows:
        top = min(b[0] for b in row)
        if previous_bottom is not None and top - previous_bottom > line_height:
            out.append("")
        out.append(" ".join(b[3] for b in sorted(row, key=lambda b: b[2])))
        previous_bottom = max(b[1] for b in row)
    return "\n".join(out)


# --- Tesseract, where Debian's is installed ------------------------------------------------------


def _tesseract(page: Image, settings: OcrSettings) -> str:
    """One page through the `tesseract` command, under the same time and memory limits."""
    if shutil.which("tesseract") is None:
        raise OcrFailed("Tesseract is not installed (apt-get install tesseract-ocr)")
    png = io.BytesIO()
    page.save(png, format="PNG")
    command = ["tesseract", "stdin", "stdout", "--psm", "3"]
    if settings.languages:
        command += ["-l", "+".join(settings.languages)]

    def limit_memory() -> None:  # in the child, before exec (POSIX only: see preexec_fn)
        try:
            import resource
        except ImportError:
            return

        resource.setrlimit(resource.RLIMIT_AS, (settings.max_memory, settings.max_memory))

    # One thread: a page per process, pages in parallel come from the indexer's pool, and
    # OpenMP's waiting threads only burn CPU on a busy machine.
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run(
            command,
            input=png.getvalue(),
            capture_output=True,
            timeout=settings.page_timeout,
            preexec_fn=limit_memory if os.name == "posix" else None,
            env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise OcrFailed(f"OCR took longer than {settings.page_timeout:g} s") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise OcrFailed(f"Tesseract failed: {message[-1] if message else f'exit status {done.returncode}'}")
    return done.stdout.decode("utf-8", errors="replace")
