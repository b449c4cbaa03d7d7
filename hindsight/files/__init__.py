"""Files and URLs a knowledge-base import reads: fetching a URL without letting a client reach our
network (fetch), turning bytes into text blocks (readers), and blocks into search chunks
(chunking). Below the engine: nothing here knows of banks or requests."""
