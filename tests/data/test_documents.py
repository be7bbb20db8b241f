"""Document streams for online LDA (SPEC T10 / §4.11) on small generated files; never the real corpus."""

import bz2
import gzip
import hashlib
import io
import lzma
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from sgmcmc.data import DataError, DataFile
from sgmcmc.data import corpora
from sgmcmc.data.documents import (
    DocumentStream,
    iter_documents,
    iter_text_lines,
    iter_wikiextractor,
    iter_xml_dump,
    load_vocabulary,
    shuffled,
    sniff_format,
    split_every_tenth,
    strip_wiki_markup,
    tokenize,
)

VOCAB = {"apple": 0, "banana": 1, "cherry": 2, "well": 3, "known": 4, "dog": 5, "None": 6}

COMPRESSORS = {
    "": lambda data: data,
    ".gz": lambda data: gzip.compress(data, mtime=0),
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
}

WIKIEXTRACTOR = (
    '<doc id="12" url="http://en.wikipedia.org/wiki?curid=12" title="Apple">\n'
    "Apple\n\nThe apple is well-known.\nBanana\n"
    "</doc>\n"
    '<doc id="25" url="http://en.wikipedia.org/wiki?curid=25" title="Dog">\n'
    "Dog\n\nA dog.\n"
    "</doc>\n"
)

XML_DUMP = """<?xml version="1.0" encoding="utf-8"?>
<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">
  <siteinfo><sitename>Wikipedia</sitename></siteinfo>
  <page>
    <title>Apple</title><ns>0</ns><id>1</id>
    <revision><id>5</id><text xml:space="preserve">'''Apple''' is a [[fruit|cherry]] and [[banana]].
{{Infobox|name={{nested|dog}}}} &lt;ref&gt;apple cite&lt;/ref&gt;&lt;!-- dog comment --&gt;
== Well known ==
See [http://example.org/dog the well site] and http://dog.example.org.
[[Category:Dog fruits]] [[File:Dog.jpg|thumb|A [[dog]] picture]] &lt;b&gt;known&lt;/b&gt;</text></revision>
  </page>
  <page>
    <title>Dog redirect</title><ns>0</ns><id>2</id><redirect title="Dog" />
    <revision><text>#REDIRECT [[Dog]]</text></revision>
  </page>
  <page>
    <title>Lower redirect</title><ns>0</ns><id>3</id>
    <revision><text>#redirect [[Apple]]</text></revision>
  </page>
  <page>
    <title>Talk:Apple</title><ns>1</ns><id>4</id>
    <revision><text>apple talk</text></revision>
  </page>
  <page>
    <title>Dog</title><ns>0</ns><id>6</id>
    <revision><text>A dog and a banana.</text></revision>
  </page>
</mediawiki>
"""


def _write(path: Path, text: str, suffix: str = "") -> Path:
    """Write ``text`` (UTF-8) to ``path`` + suffix, compressed by the suffix."""
    target = Path(f"{path}{suffix}")
    target.write_bytes(COMPRESSORS[suffix](text.encode("utf-8")))
    return target


def _word(number: int) -> str:
    """A distinct a–j word for each number in 0..999."""
    return "".join(chr(ord("a") + int(digit)) for digit in f"{number:03d}")


NUMBER_VOCAB = {_word(number): number for number in range(1000)}


def _doc(index: int) -> str:
    """A document whose word ids identify ``index`` (< 1,000,000)."""
    return f"{_word(index % 1000)} {_word(index // 1000)}"


def _key(ids: np.ndarray) -> int:
    """The index of a document made by _doc."""
    return int(ids[0]) + 1000 * int(ids[1])


def _stream(n_docs=200, **options) -> DocumentStream:
    settings = dict(seed=3, n_held_out=10, buffer_size=20)
    settings.update(options)
    return DocumentStream(lambda: (_doc(i) for i in range(n_docs)), NUMBER_VOCAB, **settings)


# ---------------------------------------------------------------------------------------------------- words


def test_tokenize_cleans_like_onlineldavb():
    text = "APPLE, banana! Well-known\ncherry\tdog's dogs 3dog None none z"
    ids = tokenize(text, VOCAB)
    assert ids.dtype == np.int32
    np.testing.assert_array_equal(ids, [0, 1, 3, 4, 2, 5])  # "dogs", "dogs" (dog's), "None" never match
    np.testing.assert_array_equal(tokenize("cherry\napple", VOCAB), [2, 0])  # lines are not glued
    assert tokenize("", VOCAB).shape == (0,) and tokenize("unknown words", VOCAB).dtype == np.int32


def test_load_vocabulary(tmp_path):
    path = _write(tmp_path / "vocab.txt", "writings\nyellow\nNone\nallein")
    assert load_vocabulary(path) == {"writings": 0, "yellow": 1, "None": 2, "allein": 3}
    assert load_vocabulary(_write(tmp_path / "v.txt", "a b\n c", ".gz")) == {"a": 0, "b": 1, "c": 2}


@pytest.mark.parametrize("text, message", [("", "empty"), ("  \n", "empty"), ("a\nb\na", "'a' more than once")])
def test_vocabulary_errors(tmp_path, text, message):
    path = _write(tmp_path / "vocab.txt", text)
    with pytest.raises(DataError, match=message) as info:
        load_vocabulary(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(DataError, match="cannot read"):
        load_vocabulary(tmp_path / "missing.txt")


def test_split_every_tenth():
    ids = np.arange(25, dtype=np.int64)
    train, test = split_every_tenth(ids)
    assert train.dtype == test.dtype == np.int32
    np.testing.assert_array_equal(test, [0, 10, 20])
    np.testing.assert_array_equal(train, [i for i in range(25) if i % 10])
    train, test = split_every_tenth(np.arange(3), every=2)
    assert test.tolist() == [0, 2] and train.tolist() == [1]
    assert [part.size for part in split_every_tenth(np.array([], dtype=np.int32))] == [0, 0]


# ---------------------------------------------------------------------------------------------------- readers


@pytest.mark.parametrize("suffix", ["", ".xz", ".bz2", ".gz"])
def test_wikiextractor(tmp_path, suffix):
    path = _write(tmp_path / "wiki.txt", WIKIEXTRACTOR, suffix)
    docs = list(iter_wikiextractor(path))
    assert docs == ["Apple\n\nThe apple is well-known.\nBanana\n", "Dog\n\nA dog.\n"]
    assert list(iter_documents(path)) == docs and sniff_format(path) == "wikiextractor"


@pytest.mark.parametrize(
    "text, message",
    [
        ('<doc id="1">\nApple\n', r"<doc> opened at line 1 is not closed by the end of the file at line 2"),
        ('<doc id="1">\na\n</doc>\n</doc>\n', "</doc> without an opening <doc> at line 4"),
        ('<doc id="1">\na\n<doc id="2">\n', "<doc> opened at line 1 is not closed at line 3"),
        ('<doc id="1">\na\n</doc>\nstray text\n', "text outside"),
    ],
)
def test_malformed_wikiextractor(tmp_path, text, message):
    path = _write(tmp_path / "bad.txt", text)
    with pytest.raises(DataError, match=message) as info:
        list(iter_wikiextractor(path))
    assert f"{path} is not WikiExtractor output" in str(info.value)


@pytest.mark.parametrize("suffix", ["", ".bz2", ".xz"])
def test_xml_dump(tmp_path, suffix):
    path = _write(tmp_path / "dump.xml", XML_DUMP, suffix)
    docs = list(iter_xml_dump(path))
    assert len(docs) == 2  # redirects (element and text) and the ns-1 page are skipped
    assert docs[0].startswith("Apple\n") and docs[1] == "Dog\nA dog and a banana."
    np.testing.assert_array_equal(tokenize(docs[0], VOCAB), [0, 0, 2, 1, 3, 4, 3, 4])  # no "dog" survives
    assert list(iter_documents(path)) == docs and sniff_format(path) == "xml"


def test_strip_wiki_markup():
    text = "''x'' [[a|b]] [[c]] {{t|{{u}}}} [https://e.org f g] [http://h] <ref name=r/>i<br/>\n==j==\n"
    assert strip_wiki_markup(text).split() == ["x", "b", "c", "f", "g", "i", "j"]


def test_xml_sniffed_by_content_and_malformed(tmp_path):
    path = _write(tmp_path / "dump.dat", XML_DUMP)
    assert sniff_format(path) == "xml" and len(list(iter_documents(path))) == 2
    broken = _write(tmp_path / "broken.xml", XML_DUMP.replace("</page>", "", 1), ".bz2")
    with pytest.raises(DataError, match="not a well-formed MediaWiki XML dump") as info:
        list(iter_xml_dump(broken))
    assert str(broken) in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("suffix", ["", ".xz", ".bz2"])
def test_text_lines(tmp_path, suffix):
    path = _write(tmp_path / "docs.txt", "apple banana\n\n   \ncherry dog\r\nno vocabulary\n", suffix)
    assert list(iter_text_lines(path)) == ["apple banana", "cherry dog", "no vocabulary"]
    assert list(iter_documents(path)) == list(iter_documents(path, "lines")) and sniff_format(path) == "lines"


def test_readers_are_lazy_and_report_bad_files(tmp_path):
    missing = tmp_path / "missing.txt"
    documents = iter_documents(missing)  # nothing opened yet
    with pytest.raises(DataError, match="cannot read"):
        next(documents)
    with pytest.raises(ValueError, match="auto, wikiextractor, xml, lines"):
        iter_documents(missing, "json")
    truncated = tmp_path / "cut.txt.xz"
    truncated.write_bytes(lzma.compress(("apple banana\n" * 1000).encode())[:-40])
    with pytest.raises(DataError, match="corrupt compressed file"):
        list(iter_text_lines(truncated))


def test_invalid_utf8_is_replaced(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes(b"caf\xe9 apple\n")
    assert list(iter_text_lines(path)) == ["caf\ufffd apple"]


# ---------------------------------------------------------------------------------------------------- shuffle


def test_shuffled_is_a_seeded_permutation():
    items = list(range(500))
    first = list(shuffled(items, 50, np.random.default_rng(1)))
    assert sorted(first) == items and first != items
    assert first == list(shuffled(iter(items), 50, np.random.default_rng(1)))
    assert first != list(shuffled(items, 50, np.random.default_rng(2)))
    assert sorted(shuffled(items, 1000, np.random.default_rng(0))) == items
    assert list(shuffled(items, 1, np.random.default_rng(0))) == items
    assert list(shuffled([], 5, np.random.default_rng(0))) == []
    with pytest.raises(ValueError, match="buffer_size"):
        list(shuffled(items, 0, np.random.default_rng(0)))


def test_shuffled_moves_items_only_within_the_buffer():
    out = list(shuffled(range(1000), 10, np.random.default_rng(0)))
    # Item i cannot come out before position i - buffer_size + 1 (it enters the buffer only then).
    assert all(position >= item - 10 + 1 for position, item in enumerate(out))


# ---------------------------------------------------------------------------------------------------- stream


class _Counting:
    """A source of ``n`` tiny documents that counts how many are out of it but not yet handed to the caller."""

    def __init__(self, n: int) -> None:
        self.n, self.produced, self.consumed, self.most = n, 0, 0, 0

    def __call__(self):
        for index in range(self.n):
            self.produced += 1
            self.most = max(self.most, self.produced - self.consumed)
            yield _doc(index)


@pytest.mark.parametrize("batch_size", [1, 7])
def test_stream_memory_is_bounded(batch_size):
    source = _Counting(100_000)
    stream = DocumentStream(source, NUMBER_VOCAB, seed=0, n_held_out=20, buffer_size=50)
    assert source.produced == 0  # lazy
    for batch in stream.batches(batch_size):
        source.consumed += len(batch)
    assert source.produced == 100_000 and stream.documents_seen == 100_000 - 20
    # Held-out documents stay in memory; a batch being filled holds batch_size − 1 more.
    assert source.most <= 20 + 50 + batch_size - 1


def test_held_out_never_trained_on_and_all_documents_used():
    stream = _stream(n_docs=300)
    held = {_key(doc) for doc in stream.held_out}
    assert len(held) == 10 and all(doc.dtype == np.int32 for doc in stream.held_out)
    trained = [_key(doc) for batch in stream.batches(32) for doc in batch]
    assert not held & set(trained) and sorted(held | set(trained)) == list(range(300))
    assert trained != sorted(trained)  # shuffled
    assert [len(batch) for batch in _stream(n_docs=300).batches(32)][-1] == 290 - 9 * 32


def test_stream_is_seeded():
    keys = lambda s: [_key(doc) for doc in s.held_out] + [_key(d) for b in s.batches(10) for d in b]  # noqa: E731
    assert keys(_stream()) == keys(_stream())
    assert keys(_stream()) != keys(_stream(seed=4))


def test_resume_with_start_and_skip_gives_the_same_batches():
    reference = [[_key(d) for d in batch] for batch in _stream().batches(8)]
    resumed = _stream(start=24)
    assert [_key(d) for d in resumed.held_out] == [_key(d) for d in _stream().held_out]
    assert resumed.documents_seen == 24
    assert [[_key(d) for d in batch] for batch in resumed.batches(8)] == reference[3:]
    skipping = _stream()
    first = [[_key(d) for d in batch] for batch in skipping.batches(8, limit=2)]
    skipping.skip(8)
    assert first == reference[:2] and skipping.documents_seen == 24
    assert [[_key(d) for d in batch] for batch in skipping.batches(8, limit=1)] == reference[3:4]
    assert skipping.documents_seen == 32
    with pytest.raises(DataError, match="only 190 training documents"):
        _stream(start=191).held_out


def test_batches_limit_continues_where_it_stopped():
    stream = _stream()
    assert [len(b) for b in stream.batches(50, limit=2)] == [50, 50] and stream.documents_seen == 100
    assert [len(b) for b in stream.batches(50)] == [50, 40] and stream.documents_seen == 190
    assert list(stream.batches(50)) == []


def test_min_words_and_too_few_documents():
    docs = ["apple banana cherry", "dog", "", "unknown", "apple dog", "cherry cherry well"]
    stream = DocumentStream(lambda: iter(docs), VOCAB, seed=0, n_held_out=1, buffer_size=3, min_words=2)
    kept = stream.held_out + [doc for batch in stream.batches(5) for doc in batch]
    assert sorted(len(doc) for doc in kept) == [2, 3, 3]
    with pytest.raises(DataError, match=r"only 3 usable documents .* need at least 4") as info:
        DocumentStream(lambda: iter(docs), VOCAB, seed=0, n_held_out=3, buffer_size=3, min_words=2, name="toy").held_out
    assert "toy" in str(info.value)
    with pytest.raises(ValueError, match="min_words"):
        DocumentStream(lambda: iter(docs), VOCAB, seed=0, n_held_out=1, buffer_size=3, min_words=0)


# ---------------------------------------------------------------------------------------------------- corpora

PART = '<doc id="{i}" url="http://en.wikipedia.org/wiki?curid={i}" title="Dog {i}">\nDog {i}\n\napple {i}\n</doc>\n'


def _fake_parts(seen):
    """A urlopen that serves a small WikiExtractor part for each wikiVisual URL (recording it in ``seen``)."""

    def urlopen(request, timeout=None):
        url = request.full_url
        seen.append(url)
        index = corpora.WIKIPEDIA_PART_URLS.index(url)
        return io.BytesIO(PART.format(i=index).encode())

    return urlopen


def _expected_sample(monkeypatch, content: bytes):
    """Make the module expect ``content`` as the Wikipedia sample."""
    sample = DataFile(
        corpora.WIKIPEDIA_SAMPLE.relative_path, (), hashlib.sha256(content).hexdigest(), len(content),
        corpora.WIKIPEDIA_SAMPLE.dataset, corpora.WIKIPEDIA_SAMPLE.companions,
    )
    monkeypatch.setattr(corpora, "WIKIPEDIA_SAMPLE", sample)


def test_registry():
    urls = corpora.WIKIPEDIA_PART_URLS
    assert len(urls) == 200 and urls[0].endswith("/1c0fac92f29f17c1603bfffbe864e0dfdff66897/text/AA/wiki_00")
    assert urls[1].endswith("text/AA/wiki_02") and urls[50].endswith("text/AB/wiki_00")
    base = f"https://raw.githubusercontent.com/jason-feng/wikiVisual/{corpora.WIKIVISUAL_COMMIT}/text/"
    assert urls[-1] == base + "AD/wiki_98"
    assert corpora.WIKIPEDIA_SAMPLE.size == 205_685_339 and corpora.WIKIPEDIA_SAMPLE.sha256.startswith("d487b2ad")
    assert corpora.DICTNOSTOPS.relative_path == "lda/dictnostops.txt" and corpora.DICTNOSTOPS.size == 58_691


def test_fetch_wikipedia_sample_downloads_the_parts_in_order(tmp_path, monkeypatch):
    content = "".join(PART.format(i=i) for i in range(200)).encode()
    _expected_sample(monkeypatch, content)
    seen = []
    monkeypatch.setattr(urllib.request, "urlopen", _fake_parts(seen))
    path = corpora.fetch_wikipedia_sample(tmp_path)
    assert path == tmp_path / "wikipedia/enwiki_wikiextractor_sample.txt.xz"
    assert seen == list(corpora.WIKIPEDIA_PART_URLS) and lzma.decompress(path.read_bytes()) == content
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left
    assert corpora.fetch_wikipedia_sample(tmp_path) == path and len(seen) == 200  # present: verified, no download

    vocabulary = _write(tmp_path / "vocab.txt", "apple dog")
    stream = corpora.wikipedia_stream(tmp_path, vocabulary=vocabulary, n_held_out=5, buffer_size=16)
    docs = stream.held_out + [doc for batch in stream.batches(50) for doc in batch]
    assert len(docs) == 200 and stream.documents_seen == 195
    assert all(doc.tolist() == [1, 0] for doc in docs)  # "Dog i", "apple i"


def test_fetch_wikipedia_sample_rejects_wrong_content(tmp_path, monkeypatch):
    _expected_sample(monkeypatch, b"something else")
    monkeypatch.setattr(urllib.request, "urlopen", _fake_parts([]))
    with pytest.raises(DataError, match="not the expected one: checksum mismatch") as info:
        corpora.fetch_wikipedia_sample(tmp_path)
    assert "\n" not in str(info.value) and not (tmp_path / "wikipedia").exists()


def test_offline_errors_are_one_line(tmp_path, monkeypatch):
    def offline(request, timeout=None):
        raise urllib.error.URLError("no network here")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(DataError) as info:
        corpora.fetch_wikipedia_sample(tmp_path)
    message = str(info.value)
    assert "\n" not in message and "wikipedia/enwiki_wikiextractor_sample.txt.xz" in message
    assert str(tmp_path) in message and "no network here" in message and "AA/wiki_00" in message
    assert not (tmp_path / "wikipedia").exists()
    with pytest.raises(DataError, match="lda/dictnostops.txt is not in"):
        corpora.wikipedia_stream(tmp_path)


def test_vocabulary_path(tmp_path, monkeypatch):
    configured = tmp_path / "mine.txt"
    assert corpora.vocabulary_path(tmp_path, configured) == configured
    content = b"apple dog"
    monkeypatch.setattr(
        corpora, "DICTNOSTOPS",
        DataFile("lda/dictnostops.txt", ("https://example.invalid/dictnostops.txt",),
                 hashlib.sha256(content).hexdigest(), len(content)),
    )
    monkeypatch.setattr(urllib.request, "urlopen", lambda request, timeout=None: io.BytesIO(content))
    path = corpora.vocabulary_path(tmp_path)
    assert path == tmp_path / "lda/dictnostops.txt" and load_vocabulary(path) == {"apple": 0, "dog": 1}


def test_wikipedia_stream_from_a_user_file(tmp_path):
    vocabulary = _write(tmp_path / "vocab.txt", "apple banana dog")
    source = _write(tmp_path / "dump.xml", XML_DUMP, ".bz2")
    stream = corpora.wikipedia_stream(tmp_path, source=source, vocabulary=vocabulary, n_held_out=1, buffer_size=4)
    assert len(stream.held_out) == 1 and sum(len(batch) for batch in stream.batches(10)) == 1
    lines = _write(tmp_path / "docs.txt", "apple\ndog\nbanana\n")
    stream = corpora.wikipedia_stream(source=lines, vocabulary=vocabulary, n_held_out=2, buffer_size=1, format="lines")
    assert sorted(int(doc[0]) for doc in stream.held_out + next(stream.batches(5))) == [0, 1, 2]
    with pytest.raises(DataError, match="does not exist"):
        corpora.wikipedia_stream(source=tmp_path / "nothing.txt", vocabulary=vocabulary)
    with pytest.raises(ValueError, match="allowed: auto, wikiextractor, xml, lines"):
        corpora.wikipedia_stream(source=lines, vocabulary=vocabulary, format="csv")
