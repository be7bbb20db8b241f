"""Document streams for online LDA (SPEC §2 T10, §4 item 11; Patterson & Teh 2013, Ma, Chen & Fox 2015 Fig. 3).

Raw documents are read lazily, line by line, from WikiExtractor output, a MediaWiki XML dump or a file with one
document per line (plain, ``.gz``, ``.bz2`` or ``.xz`` by suffix); they are cleaned and mapped to word ids as in
Hoffman's onlineldavb ``parse_doc_list``, shuffled through a bounded buffer with a seed, and split into a held-out
set (the first ``n_held_out`` shuffled documents) and a training stream. Nothing here holds more than
``n_held_out + buffer_size`` documents, whatever the size of the corpus. No knowledge of the data folder: see
:mod:`sgmcmc.data.corpora` for the shared Wikipedia sample and vocabulary.
"""

from __future__ import annotations

import io
import itertools
import os
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, TypeVar

import numpy as np

from sgmcmc.data.files import STREAM_ERRORS, open_decompressed
from sgmcmc.data.folder import DataError

FORMATS = ("auto", "wikiextractor", "xml", "lines")
XML_SUFFIXES = (".xml", ".xml.bz2", ".xml.gz", ".xml.xz")
DEFAULT_SOURCE_NAME = "the document source"

T = TypeVar("T")
_END = object()

# ---------------------------------------------------------------------------------------------------- words


def load_vocabulary(path: os.PathLike) -> Dict[str, int]:
    """Word -> id (0, 1, … in file order) of a whitespace-separated word list such as Hoffman's
    ``dictnostops.txt`` (onlineldavb ``onlinewikipedia.py``). Every word is kept as written (the file's entry
    ``None`` too); duplicate words or an empty file raise DataError naming the file."""
    path = Path(path)
    try:
        with open_decompressed(path) as stream:
            words = stream.read().decode("utf-8", errors="replace").split()
    except (OSError, EOFError) as exc:
        raise DataError(f"cannot read the vocabulary {path}: {exc}") from exc
    if not words:
        raise DataError(f"the vocabulary {path} is empty (expected whitespace-separated words)")
    vocabulary = {word: index for index, word in enumerate(words)}
    if len(vocabulary) != len(words):
        repeated = next(word for word, count in Counter(words).items() if count > 1)
        raise DataError(f"the vocabulary {path} lists the word {repeated!r} more than once")
    return vocabulary


_NOT_LETTER = re.compile(r"[^a-z\s]+")


def clean_words(text: str) -> List[str]:
    """Hoffman's cleaning (onlineldavb ``parse_doc_list``): lowercase, '-' -> ' ', drop every character that is
    not a-z or white space, split on white space. Unlike the original, newlines and tabs separate words."""
    return _NOT_LETTER.sub("", text.lower().replace("-", " ")).split()


def tokenize(text: str, vocabulary: Mapping[str, int]) -> np.ndarray:
    """Word ids (int32, in text order) of the vocabulary words of ``text`` after :func:`clean_words`; other
    words are dropped, as in onlineldavb ``parse_doc_list`` (which keeps counts, not order)."""
    lookup = vocabulary.get
    ids = [index for index in map(lookup, clean_words(text)) if index is not None]
    return np.array(ids, dtype=np.int32)


def split_every_tenth(word_ids: np.ndarray, every: int = 10) -> Tuple[np.ndarray, np.ndarray]:
    """(train, test) word ids of one held-out document: tokens at positions i with i % every == 0 are test,
    the rest train (SPEC T10 / §4.11, as in Patterson & Teh's code); both int32, in document order."""
    if every < 1:
        raise ValueError(f"every must be at least 1, got {every}")
    ids = np.asarray(word_ids, dtype=np.int32)
    test = np.zeros(ids.shape[0], dtype=bool)
    test[::every] = True
    return ids[~test], ids[test]


# ---------------------------------------------------------------------------------------------------- readers


def _binary(path: Path):
    """The decompressed byte stream of ``path`` (codec by suffix); DataError if it cannot be opened."""
    try:
        return open_decompressed(path)
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc}") from exc


def _stream_error(path: Path, exc: BaseException) -> DataError:
    """The one-line error for a file whose (compressed) stream breaks while reading."""
    if Path(path).suffix.lower() in (".gz", ".bz2", ".xz"):
        return DataError(f"corrupt compressed file {path}: {exc} (file corrupt or truncated)")
    return DataError(f"cannot read {path}: {exc}")


def _lines(path: os.PathLike) -> Iterator[str]:
    """The lines of ``path`` decoded as UTF-8 (errors replaced), read one at a time; opened on the first next()."""
    path = Path(path)
    with io.TextIOWrapper(_binary(path), encoding="utf-8", errors="replace") as text:
        try:
            yield from text
        except STREAM_ERRORS as exc:
            raise _stream_error(path, exc) from exc


def iter_wikiextractor(path: os.PathLike) -> Iterator[str]:
    """Articles of WikiExtractor output: ``<doc id=.. url=.. title=..>``, the article lines (the title line
    first), ``</doc>``. Yields each article's text; an unclosed ``<doc>``, a ``</doc>`` without an opening tag
    or text outside the tags raise DataError with the line number."""
    lines: Optional[List[str]] = None
    opened = 0
    number = 0
    for number, line in enumerate(_lines(path), start=1):
        if line.startswith("<doc ") or line.rstrip() == "<doc>":
            if lines is not None:
                raise _not_wikiextractor(path, f"<doc> opened at line {opened} is not closed", number)
            lines, opened = [], number
        elif line.rstrip() == "</doc>":
            if lines is None:
                raise _not_wikiextractor(path, "</doc> without an opening <doc>", number)
            yield "".join(lines)
            lines = None
        elif lines is not None:
            lines.append(line)
        elif line.strip():
            raise _not_wikiextractor(path, "text outside <doc> ... </doc>", number)
    if lines is not None:
        raise _not_wikiextractor(path, f"<doc> opened at line {opened} is not closed by the end of the file", number)


def _not_wikiextractor(path: os.PathLike, what: str, line: int) -> DataError:
    """DataError for a malformed WikiExtractor file."""
    return DataError(f"{path} is not WikiExtractor output: {what} at line {line}")


def iter_text_lines(path: os.PathLike) -> Iterator[str]:
    """One document per line (the line without its newline); blank lines are skipped."""
    for line in _lines(path):
        if line.strip():
            yield line.rstrip("\r\n")


# In the spirit of Hoffman's ``wikirandom.py``: drop templates, references, tags, category/file links and URLs,
# keep the visible text of links, drop bold/italic quotes and heading marks.
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_REF = re.compile(r"<ref[^>]*/>|<ref[^>]*>.*?</ref\s*>", re.S | re.I)
_TEMPLATE = re.compile(r"\{\{(?:[^{}]|\{\{[^{}]*\}\})*\}\}")  # nested one level; applied twice
_SPECIAL_LINK = re.compile(r"\[\[\s*(?:category|file|image)\s*:(?:[^\[\]]|\[\[[^\[\]]*\]\])*\]\]", re.I)
_LINK = re.compile(r"\[\[(?:[^\[\]|]*\|)*([^\[\]|]*)\]\]")
_EXTERNAL_LINK = re.compile(r"\[(?:https?|ftp)://[^\s\]]*\s*([^\]]*)\]", re.I)
_URL = re.compile(r"(?:https?|ftp)://\S+", re.I)
_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")
_QUOTES = re.compile(r"'{2,}")
_HEADING = re.compile(r"^[ \t]*=+[ \t]*(.*?)[ \t]*=+[ \t]*$", re.M)
_REDIRECT = re.compile(r"\s*#redirect", re.I)


def strip_wiki_markup(text: str) -> str:
    """Plain text of MediaWiki markup, by a few regexes after Hoffman's ``wikirandom.py``: removes comments,
    ``<ref>`` notes, ``{{templates}}`` (nested), ``[[Category:..]]``/``[[File:..]]``/``[[Image:..]]``, HTML tags
    and URLs; ``[[a|b]]`` -> ``b``, ``[[a]]`` -> ``a``, ``[http://x text]`` -> ``text``; drops ``''``/``'''``
    and the ``=`` of headings."""
    text = _REF.sub(" ", _COMMENT.sub(" ", text))
    for _ in range(2):
        text = _TEMPLATE.sub(" ", text)
    text = _LINK.sub(r"\1", _SPECIAL_LINK.sub(" ", text))
    text = _URL.sub(" ", _EXTERNAL_LINK.sub(r"\1", text))
    text = _QUOTES.sub("", _TAG.sub(" ", text))
    return _HEADING.sub(r"\1", text)


def _local(tag: str) -> str:
    """An element name without its ``{namespace}``."""
    return tag.rpartition("}")[2]


def _page_text(page: ET.Element) -> Optional[str]:
    """Title and plain text of a main-namespace article page; None for other namespaces and redirects."""
    fields: Dict[str, Optional[str]] = {}
    redirect = False
    for child in page:
        name = _local(child.tag)
        if name == "redirect":
            redirect = True
        elif name == "revision":
            for part in child:
                if _local(part.tag) == "text":
                    fields["text"] = part.text or ""  # the last revision wins
        else:
            fields[name] = child.text
    text = fields.get("text")
    if redirect or text is None or (fields.get("ns") or "").strip() != "0" or _REDIRECT.match(text):
        return None
    return f"{fields.get('title') or ''}\n{strip_wiki_markup(text)}"


def iter_xml_dump(path: os.PathLike) -> Iterator[str]:
    """Articles of a MediaWiki XML dump (any export schema version): pages with ``<ns>0</ns>`` that are not
    redirects, as title line + :func:`strip_wiki_markup` of the last revision. Parsed with
    ``ElementTree.iterparse``, clearing every finished page, so memory stays bounded; malformed XML raises
    DataError."""
    path = Path(path)
    with _binary(path) as stream:
        root = None
        try:
            for event, element in ET.iterparse(stream, events=("start", "end")):
                if root is None:
                    root = element
                if event == "end" and _local(element.tag) == "page":
                    text = _page_text(element)
                    root.clear()
                    if text is not None:
                        yield text
        except ET.ParseError as exc:
            raise DataError(f"{path} is not a well-formed MediaWiki XML dump: {exc}") from exc
        except STREAM_ERRORS as exc:
            raise _stream_error(path, exc) from exc


def iter_documents(path: os.PathLike, format: str = "auto") -> Iterator[str]:
    """Raw documents of ``path`` in ``format``: ``wikiextractor``, ``xml`` (MediaWiki dump), ``lines`` (one
    document per line) or ``auto``: by name (``.xml``, ``.xml.bz2``, ``.xml.gz``, ``.xml.xz``: xml), else by the
    first non-blank line (``<doc ``: wikiextractor; ``<mediawiki`` or ``<?xml``: xml; anything else: lines).
    The format is checked now; the file is opened on the first next()."""
    check_format(format)
    if format == "auto":
        return _auto(Path(path))
    return _READERS[format](path)


def check_format(format: str) -> str:
    """``format`` if it is one of FORMATS, else ValueError naming the allowed values."""
    if format not in FORMATS:
        raise ValueError(f"unknown document format {format!r}; allowed: {', '.join(FORMATS)}")
    return format


_READERS: Dict[str, Callable[[os.PathLike], Iterator[str]]] = {
    "wikiextractor": iter_wikiextractor,
    "xml": iter_xml_dump,
    "lines": iter_text_lines,
}


def sniff_format(path: os.PathLike) -> str:
    """The format ``auto`` picks for ``path`` (reads at most up to its first non-blank line)."""
    if str(path).lower().endswith(XML_SUFFIXES):
        return "xml"
    first = next((line.lstrip() for line in _lines(path) if line.strip()), "")
    if first.startswith("<doc ") or first.rstrip() == "<doc>":
        return "wikiextractor"
    if first.startswith(("<mediawiki", "<?xml")):
        return "xml"
    return "lines"


def _auto(path: Path) -> Iterator[str]:
    """Documents of ``path`` in the sniffed format (sniffing on the first next())."""
    yield from _READERS[sniff_format(path)](path)


# ---------------------------------------------------------------------------------------------------- stream


def shuffled(iterable: Iterable[T], buffer_size: int, rng: np.random.Generator) -> Iterator[T]:
    """Bounded shuffle buffer: fill a buffer with the first ``buffer_size`` items, then repeatedly emit a
    uniformly chosen buffered item and put the next item in its place; when the input ends, the rest comes out
    in random order. Emitting before pulling the next item keeps at most ``buffer_size`` items (the emitted
    one aside) in the buffer, and gives the same distribution as the usual pull-then-emit form. Deterministic
    given ``rng``."""
    _check_count("buffer_size", buffer_size, 1)
    items = iter(iterable)
    buffer = list(itertools.islice(items, int(buffer_size)))
    while buffer:
        slot = int(rng.integers(len(buffer)))
        buffer[slot], buffer[-1] = buffer[-1], buffer[slot]
        yield buffer.pop()
        following = next(items, _END)
        if following is not _END:
            buffer.append(following)


class DocumentStream:
    """A seeded, resumable stream of tokenized documents for online LDA (SPEC T10 / §4.11).

    Pipeline: ``source_docs()`` (raw strings) -> :func:`tokenize` -> drop documents with fewer than
    ``min_words`` vocabulary words -> :func:`shuffled` (``buffer_size``, ``np.random.default_rng(seed)``) -> the
    first ``n_held_out`` documents form :attr:`held_out` (never trained on) -> the rest come out of
    :meth:`batches` in order. The source is opened on first use (:attr:`held_out`, :meth:`batches` or
    :meth:`skip`); at most ``n_held_out + buffer_size`` documents are held at any time, plus the batch being
    filled. ``start=n`` (or :meth:`skip`) replays the same seeded stream and resumes after its first n training
    documents. ``source_docs`` must give the same documents in the same order on every call.
    """

    def __init__(
        self,
        source_docs: Callable[[], Iterable[str]],
        vocabulary: Mapping[str, int],
        *,
        seed: int,
        n_held_out: int,
        buffer_size: int,
        min_words: int = 1,
        start: int = 0,
        name: str = DEFAULT_SOURCE_NAME,
    ) -> None:
        _check_count("n_held_out", n_held_out, 0)
        _check_count("buffer_size", buffer_size, 1)
        _check_count("min_words", min_words, 1)
        _check_count("start", start, 0)
        if not vocabulary:
            raise ValueError("the vocabulary is empty")
        self.source_docs = source_docs
        self.vocabulary = vocabulary
        self.seed, self.n_held_out, self.buffer_size, self.min_words = seed, n_held_out, buffer_size, min_words
        self.name = name
        self.start = start
        self.documents_seen = 0
        self._held_out: Optional[List[np.ndarray]] = None
        self._training: Optional[Iterator[np.ndarray]] = None

    @property
    def vocabulary_size(self) -> int:
        """Number of words W (ids 0..W−1)."""
        return len(self.vocabulary)

    @property
    def held_out(self) -> List[np.ndarray]:
        """The ``n_held_out`` held-out documents (int32 word ids), the first of the shuffled stream."""
        self._open()
        return self._held_out  # type: ignore[return-value]

    def held_out_split(self, every: int = 10) -> List[Tuple[np.ndarray, np.ndarray]]:
        """(train, test) of each held-out document by :func:`split_every_tenth`."""
        return [split_every_tenth(doc, every) for doc in self.held_out]

    def _usable(self) -> Iterator[np.ndarray]:
        """Tokenized documents with at least ``min_words`` vocabulary words, in source order."""
        for text in self.source_docs():
            ids = tokenize(text, self.vocabulary)
            if ids.shape[0] >= self.min_words:
                yield ids

    def _open(self) -> None:
        """Start the pipeline once: take the held-out set, check a training document follows, skip ``start``."""
        if self._training is not None:
            return
        stream = shuffled(self._usable(), self.buffer_size, np.random.default_rng(self.seed))
        held_out = list(itertools.islice(stream, self.n_held_out))
        first = next(stream, _END)
        if first is _END:
            raise DataError(
                f"{self.name} has only {len(held_out)} usable documents (at least {self.min_words} vocabulary "
                f"words each); need at least {self.n_held_out + 1} (n_held_out={self.n_held_out} plus training)"
            )
        self._held_out = held_out
        self._training = itertools.chain([first], stream)  # type: ignore[list-item]
        if self.start:
            self._advance(self.start, f"resume at document {self.start}")

    def _advance(self, n: int, what: str) -> None:
        """Drop the next ``n`` training documents, counting them as seen."""
        skipped = sum(1 for _ in itertools.islice(self._training, n))  # type: ignore[arg-type]
        self.documents_seen += skipped
        if skipped < n:
            raise DataError(f"cannot {what}: {self.name} has only {self.documents_seen} training documents")

    def skip(self, n: int) -> None:
        """Move ``n`` training documents on from the current position (they count as seen)."""
        _check_count("n", n, 0)
        self._open()
        self._advance(n, f"skip {n} documents after document {self.documents_seen}")

    def batches(self, batch_size: int, limit: Optional[int] = None) -> Iterator[List[np.ndarray]]:
        """Minibatches (lists of int32 word-id arrays) of the next training documents, at most ``limit``
        batches (None: until the stream ends; the last batch may be smaller). Continues where the previous
        call stopped; ``documents_seen`` counts every document handed out."""
        _check_count("batch_size", batch_size, 1)
        if limit is not None:
            _check_count("limit", limit, 0)
        self._open()
        made = 0
        while limit is None or made < limit:
            batch = list(itertools.islice(self._training, batch_size))  # type: ignore[arg-type]
            if not batch:
                return
            self.documents_seen += len(batch)
            made += 1
            yield batch

    def __repr__(self) -> str:
        return (
            f"DocumentStream({self.name}, W={self.vocabulary_size}, seed={self.seed}, n_held_out={self.n_held_out}, "
            f"buffer_size={self.buffer_size}, documents_seen={self.documents_seen})"
        )


def _check_count(name: str, value: int, least: int) -> None:
    """ValueError unless ``value`` is a whole number >= ``least``."""
    if isinstance(value, bool) or int(value) != value or value < least:
        raise ValueError(f"{name} must be a whole number >= {least}, got {value!r}")
