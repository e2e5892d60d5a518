"""The OCR worker process: ``python -m sensetree.ingest.extract.ocr_worker REQUEST_FD REPLY_FD THREADS [DEVICE]``."""

import sys
from multiprocessing.connection import Connection

from .ocr import serve

if __name__ == "__main__":
    serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False), int(sys.argv[3]),
          sys.argv[4] if len(sys.argv) > 4 else "cpu")
