"""Ed25519 signing keys: make, save (private key mode 0600), load, and name them.

The keyid is the hex sha256 of the DER SubjectPublicKeyInfo encoding of the public key, so
anyone holding the public key can compute it. The private key is never put in a bundle.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from harness.errors import EnvironmentProblem, UsageError

PRIVATE_NAME = "dossier.key"
PUBLIC_NAME = "dossier.pub"
KEY_ENV = "DOSSIER_KEY"  # path of the private key a run signs with


def default_key_dir() -> Path:
    """~/.config/rig-dossier (or $XDG_CONFIG_HOME/rig-dossier)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "rig-dossier"


def configured_key_path() -> Path:
    """The private key a run uses when no --signing-key is given: $DOSSIER_KEY, else the default."""
    return Path(os.environ[KEY_ENV]) if os.environ.get(KEY_ENV) else default_key_dir() / PRIVATE_NAME


def public_path_for(private_path: Path) -> Path:
    return private_path.with_suffix(".pub")


def keyid(public_key: Ed25519PublicKey) -> str:
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


@dataclass(frozen=True)
class SigningKey:
    """A private key, where it lives, and its keyid."""

    private: Ed25519PrivateKey
    path: Path

    @property
    def public(self) -> Ed25519PublicKey:
        return self.private.public_key()

    @property
    def keyid(self) -> str:
        return keyid(self.public)


def public_pem(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def generate(out_dir: Path, force: bool = False) -> tuple[Path, Path]:
    """Write a new key pair into OUT_DIR: dossier.key (0600) and dossier.pub."""
    private_path = out_dir / PRIVATE_NAME
    return write_pair(Ed25519PrivateKey.generate(), private_path, force)


def write_pair(private: Ed25519PrivateKey, private_path: Path, force: bool = False) -> tuple[Path, Path]:
    public_path = public_path_for(private_path)
    for path in (private_path, public_path):
        if path.exists() and not force:
            raise UsageError(f"{path} already exists", hint="pass --force to replace it, or choose --out")
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    try:
        private_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Create with 0600 from the start: never a moment where the key is world-readable.
        if force and private_path.exists():
            private_path.unlink()
        fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(pem)
        os.chmod(private_path, 0o600)
        public_path.write_bytes(public_pem(private.public_key()))
    except OSError as exc:
        raise EnvironmentProblem(f"cannot write the key pair in {private_path.parent}: {exc.strerror or exc}") from exc
    return private_path, public_path


def _read_key_file(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise UsageError(
            f"{what} {path}: no such file", hint="make a key pair with `dossier keygen`, or pass the right key file"
        ) from None
    except IsADirectoryError:
        raise UsageError(f"{what} {path}: is a folder, not a key file") from None
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None


def _not_a_key(path: Path, data: bytes, what: str) -> UsageError:
    """Our own one line about a file that does not parse as a key (not cryptography's text)."""
    if not data.strip():
        why = "is empty"
    elif b"-----BEGIN" not in data:
        why = "is not a PEM file (no '-----BEGIN' line)"
    elif b"ENCRYPTED" in data:
        why = "is encrypted; dossier signs with an unencrypted key (make one with `dossier keygen`)"
    else:
        why = "holds a PEM block that does not parse as a key (damaged or truncated?)"
    return UsageError(f"{what} {path} {why}")


def check_private_mode(path: Path) -> None:
    """Refuse a private key others can read or write, as ssh does."""
    if os.name != "posix":
        return
    mode = os.stat(path).st_mode & 0o777
    if mode & 0o077:
        raise UsageError(
            f"private key {path} has mode {mode:04o}: others may read it; allow only its owner with `chmod 600 {path}`"
        )


def load_private(path: Path) -> SigningKey:
    data = _read_key_file(path, "signing key")
    check_private_mode(path)
    try:
        private = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise _not_a_key(path, data, "signing key") from None
    if not isinstance(private, Ed25519PrivateKey):
        raise UsageError(f"signing key {path} is not an Ed25519 private key")
    return SigningKey(private, path)


def load_public(path: Path) -> Ed25519PublicKey:
    """A trusted public key (PEM). A private key is refused with the fix (its public half): a key
    option that verifies takes what others may hold, and the private half is never passed around."""
    data = _read_key_file(path, "public key")
    if b"PRIVATE KEY" in data:
        beside = public_path_for(path)
        raise UsageError(
            f"public key {path} is a private key: a key that verifies is the public half (--signing-key takes the private one)",
            hint=f"pass its public half{f', {beside}' if beside.exists() else ''}; `dossier keygen` shows "
            "where your pair is, and the signer of someone else's bundle sends you theirs",
        )
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm):
        raise _not_a_key(path, data, "public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise UsageError(f"public key {path} is not an Ed25519 public key")
    return key


def signing_key_for_run(explicit: Path | None) -> tuple[SigningKey, str | None]:
    """The key a run signs with, and a note when one was just made.

    An explicit --signing-key must exist. The configured location ($DOSSIER_KEY or the default) gets
    a new key pair on first use, and the note says where.
    """
    if explicit is not None:
        return load_private(explicit), None
    path = configured_key_path()
    if path.exists():
        return load_private(path), None
    private_path, public_path = write_pair(Ed25519PrivateKey.generate(), path)
    key = load_private(private_path)
    return key, (
        f"made a new signing key {private_path} (keyid {key.keyid[:16]}...); "
        f"others verify your bundles with its public key {public_path}"
    )
