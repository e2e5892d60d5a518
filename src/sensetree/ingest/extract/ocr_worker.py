"""The OCR worker process: ``python -m sensetree.ingest.extract.ocr_worker fds REQUEST_FD REPLY_FD THREADS DEVICE``
(POSIX: two inherited pipes) or ``... handle HANDLE THREADS DEVICE`` (Windows: one inherited duplex named pipe)."""

import sys

from .ocr import serve

if __name__ == "__main__":
    if sys.argv[1] == "handle":
        from multiprocessing.connection import PipeConnection  # type: ignore[attr-defined]  # Windows only

        pipe = PipeConnection(int(sys.argv[2]))
        serve(pipe, pipe, int(sys.argv[3]), sys.argv[4])
    else:
        from multiprocessing.connection import Connection

        serve(
            Connection(int(sys.argv[2]), writable=False),
            Connection(int(sys.argv[3]), readable=False),
            int(sys.argv[4]),
            sys.argv[5],
        )
