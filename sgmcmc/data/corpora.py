"""Corpora for online LDA (SPEC §2 T10, §4 item 11): Hoffman's vocabulary and the shared Wikipedia sample.

Files (shared/data/README.md §3–4), in the data folder:

- ``lda/dictnostops.txt``: the 7,702-word vocabulary of Hoffman's onlineldavb (``onlinewikipedia.py``);
- ``wikipedia/enwiki_wikiextractor_sample.txt.xz``: 15,340 WikiExtractor articles, the concatenation of every
  2nd file of GitHub ``jason-feng/wikiVisual`` ``text/`` (``AA/wiki_00, AA/wiki_02, …, AD/wiki_98``),
  xz-compressed; checked by the SHA-256 and size of its decompressed content.

:func:`wikipedia_stream` turns either that sample or a user file (WikiExtractor output, a MediaWiki XML dump or
one document per line) into a :class:`~sgmcmc.data.documents.DocumentStream`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence, Tuple, Union

from sgmcmc.data.documents import DocumentStream, check_format, iter_documents, load_vocabulary
from sgmcmc.data.files import (
    DataFile,
    FolderNotWritable,
    copy_url,
    download_into,
    fetch,
    make_folders,
    missing_message,
    reason,
    remove_empty,
    verify_cached,
)
from sgmcmc.data.folder import DataError, resolve_data_dir

PathLike = Union[str, os.PathLike]

ONLINELDAVB_URL = "https://raw.githubusercontent.com/blei-lab/onlineldavb/master/dictnostops.txt"
OELESIN_COMMIT = "7f60b7f952cfbb785dbac9e4e59f2a119a5bef3f"
DICTNOSTOPS = DataFile(
    relative_path="lda/dictnostops.txt",
    urls=(
        ONLINELDAVB_URL,
        f"https://raw.githubusercontent.com/OElesin/data-science-in-30-mins/{OELESIN_COMMIT}/dictnostops.txt",
    ),
    sha256="92548d525776ad6c780608cde9997c7613c16dae98124ff3a42729758efd89e5",
    size=58_691,
    dataset="online LDA vocabulary",
    companions=("dictnostops.txt",),
)

WIKIVISUAL_COMMIT = "1c0fac92f29f17c1603bfffbe864e0dfdff66897"
WIKIVISUAL_TEXT = f"https://raw.githubusercontent.com/jason-feng/wikiVisual/{WIKIVISUAL_COMMIT}/text/"


def wikipedia_part_names() -> Tuple[str, ...]:
    """``AA/wiki_00, AA/wiki_02, …, AD/wiki_98``: every 2nd file of AA..AD × wiki_00..wiki_99 in sorted order."""
    every_file = [f"{folder}/wiki_{number:02d}" for folder in ("AA", "AB", "AC", "AD") for number in range(100)]
    return tuple(every_file[::2])


WIKIPEDIA_PART_URLS: Tuple[str, ...] = tuple(WIKIVISUAL_TEXT + name for name in wikipedia_part_names())
WIKIPEDIA_SAMPLE = DataFile(
    relative_path="wikipedia/enwiki_wikiextractor_sample.txt.xz",
    urls=(),  # 200 parts, concatenated by fetch_wikipedia_sample (WIKIPEDIA_PART_URLS)
    sha256="d487b2ad317bfc990adcbc05973741e58f52977f8602d2f9ca34ee4d8ec3a20d",
    size=205_685_339,
    dataset="Wikipedia sample",
    companions=("enwiki_wikiextractor_sample.txt.xz",),
)


class _PartFailed(Exception):
    """Downloading one part failed; the message is ``from URL (reason)``."""


# ---------------------------------------------------------------------------------------------------- fetching


def fetch_wikipedia_sample(data_dir: PathLike, part_urls: Optional[Sequence[str]] = None) -> Path:
    """Path of the Wikipedia sample in ``data_dir``, verified; when missing, download its 200 parts in order
    into one xz-compressed temporary file next to it, check the decompressed SHA-256 and size, and move it into
    place. No network (or a wrong download) -> one-line DataError naming the file and the data folder."""
    data_file = WIKIPEDIA_SAMPLE
    data_dir = Path(data_dir)
    target = data_dir / data_file.relative_path
    if target.exists():
        return verify_cached(target, data_file)
    created = make_folders(target.parent, data_file, data_dir)
    urls = WIKIPEDIA_PART_URLS if part_urls is None else tuple(part_urls)
    try:
        _download_parts(urls, target, data_file)
    except (_PartFailed, FolderNotWritable, DataError) as exc:
        remove_empty(created)
        attempts = str(exc) if isinstance(exc, _PartFailed) else f"({exc})"
        raise DataError(missing_message(data_file, data_dir, attempts)) from exc
    return verify_cached(target, data_file)


def _download_parts(urls: Sequence[str], target: Path, data_file: DataFile) -> None:
    """Concatenate ``urls`` xz-compressed into ``target`` (:func:`~sgmcmc.data.files.download_into`)."""

    def write(out) -> None:
        for url in urls:
            try:
                copy_url(url, out)
            except Exception as exc:  # noqa: BLE001 - any network/IO failure: the download cannot complete
                raise _PartFailed(f"from {url} ({reason(exc)})") from exc

    download_into(target, data_file, write, compress=True)


def vocabulary_path(data_dir: Optional[PathLike] = None, vocabulary: Optional[PathLike] = None) -> Path:
    """The vocabulary file: ``vocabulary`` if configured, else Hoffman's ``dictnostops.txt`` fetched into the
    data folder (:func:`~sgmcmc.data.folder.resolve_data_dir`)."""
    if vocabulary is not None and str(vocabulary) != "":
        return Path(vocabulary).expanduser()
    return fetch(DICTNOSTOPS, resolve_data_dir(data_dir))


def wikipedia_stream(
    data_dir: Optional[PathLike] = None,
    source: Optional[PathLike] = None,
    vocabulary: Optional[PathLike] = None,
    *,
    seed: int = 0,
    n_held_out: int = 1000,
    buffer_size: int = 2000,
    min_words: int = 1,
    format: str = "auto",
    start: int = 0,
) -> DocumentStream:
    """The online-LDA document stream (SPEC §4.11): ``source`` (WikiExtractor output, a MediaWiki XML dump or
    one document per line; None: the shared Wikipedia sample from the data folder) tokenized with
    ``vocabulary`` (None: dictnostops.txt), shuffled by ``seed``; the first ``n_held_out`` documents held out."""
    check_format(format)
    words = load_vocabulary(vocabulary_path(data_dir, vocabulary))
    if source is None or str(source) == "":
        path = fetch_wikipedia_sample(resolve_data_dir(data_dir))
    else:
        path = Path(source).expanduser()
        if not path.is_file():
            raise DataError(f"the document source {path} does not exist or is not a file")
    return DocumentStream(
        lambda: iter_documents(path, format), words, seed=seed, n_held_out=n_held_out,
        buffer_size=buffer_size, min_words=min_words, start=start, name=str(path),
    )
