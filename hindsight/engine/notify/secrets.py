"""Webhook signing secrets: kept encrypted, usable to sign.

A webhook's secret must be readable by the server (every delivery is signed with it), so it
cannot be kept as a hash the way API keys are. It is kept encrypted with AES-256-GCM under a key
that is not in the database: HINDSIGHT_API_SECRETS_KEY, or, with the embedded database, a key
made once in `secrets.key` of the data folder (mode 0600), beside the database it protects. A
dump or a copy of the database alone gives no secret away. The associated data binds each
ciphertext to its bank and webhook, so a row's secret copied into another row (another bank's)
does not decrypt. Each sealed secret carries the fingerprint of the key that sealed it, so a
server started with another key says that the key changed, instead of failing as if the data were
corrupt. A secret is shown once, when the server makes it (or is given it); never again.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from hindsight.config import Settings
from hindsight.engine.errors import Conflict

KEY_FILE = "secrets.key"
NONCE = 12
_INFO = b"hindsight secrets v1"


class SecretUnreadable(Exception):
    """A stored secret this server cannot decrypt (its key changed, or the row was tampered with)."""


def new_secret() -> str:
    """A signing secret: 256 random bits, prefixed so that it is recognised in a config file."""
    return "whsec_" + secrets.token_urlsafe(32)


def signature(secret: str, body: bytes) -> str:
    """The X-Hindsight-Signature of a delivery: HMAC-SHA256 of the exact body bytes, hex, prefixed
    `sha256=` (what Hindsight's webhooks send, so that its receivers verify ours)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class SecretBox:
    key: bytes  # 32 bytes, derived from the configured key or the key file

    @property
    def fingerprint(self) -> str:
        return hmac.new(self.key, b"fingerprint", hashlib.sha256).hexdigest()[:16]

    def seal(self, secret: str, bank_id: str, webhook_id: str) -> bytes:
        nonce = os.urandom(NONCE)
        return nonce + AESGCM(self.key).encrypt(nonce, secret.encode(), _bound(bank_id, webhook_id))

    def open(self, sealed: bytes, fingerprint: str, bank_id: str, webhook_id: str) -> str:
        if fingerprint != self.fingerprint:
            raise SecretUnreadable(
                "its signing secret was stored with another key than this server's (HINDSIGHT_API_SECRETS_KEY or "
                "secrets.key changed); give the webhook a new secret"
            )
        try:
            return AESGCM(self.key).decrypt(sealed[:NONCE], sealed[NONCE:], _bound(bank_id, webhook_id)).decode()
        except (InvalidTag, ValueError):
            raise SecretUnreadable(
                "its stored signing secret does not decrypt; give the webhook a new secret"
            ) from None


def _bound(bank_id: str, webhook_id: str) -> bytes:
    return f"{bank_id}\x00{webhook_id}".encode()


def _derive(material: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(material)


_boxes: dict[tuple, SecretBox] = {}


def secret_box(settings: Settings) -> SecretBox:
    """The box of this server's key (made once a process)."""
    where = (settings.secrets_key, settings.database_url, str(settings.data_dir))
    box = _boxes.get(where)
    if box is None:
        box = _boxes[where] = SecretBox(_derive(_material(settings)))
    return box


def _material(settings: Settings) -> bytes:
    if settings.secrets_key:
        return settings.secrets_key.encode()
    if settings.database_url:
        raise Conflict(
            "webhooks need HINDSIGHT_API_SECRETS_KEY on this server: their signing secrets are stored encrypted "
            "with it, and with an external database there is no data folder to keep a key in (docs/webhooks.md)"
        )
    return _key_file(Path(settings.data_dir) / KEY_FILE)


def _key_file(path: Path) -> bytes:
    """The data folder's key, made on first use; processes starting together agree on one
    (exclusive creation: the losers read the winner's)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as f:
            f.write(base64.b64encode(os.urandom(32)).decode() + "\n")
    for _ in range(50):  # a process that lost the race may read before the winner has written
        text = path.read_text().strip()
        if text:
            return base64.b64decode(text)
        time.sleep(0.01)
    raise OSError(f"{path} is empty")
