"""attnsym.audits.corpus: text and JSON Lines corpora, bad bytes, long lines, ids; the standard library's prose."""

from __future__ import annotations

import pytest

from attnsym.audits import CorpusError, read_corpus, stdlib_corpus
from attnsym.audits.corpus import corpus_of


def test_text_file_ids_are_line_numbers_and_blank_lines_are_skipped(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("first text\n\n   \nsecond text\r\n")
    c = read_corpus(p)
    assert c.ids == ("1", "4") and c.texts == ("first text", "second text") and c.skipped == 2


def test_jsonl_takes_any_id_field(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"doc_id": 7, "text": "a"}\n{"text": "b", "extra": 1}\n')
    assert read_corpus(p).ids == ("7", "2")
    with pytest.raises(CorpusError, match="no field 'extra'"):
        read_corpus(p, id_field="extra")


@pytest.mark.parametrize("content, match", [
    (b"{\"text\": \"good\"}\n\xff\xfe bad\n", "line 2 is not UTF-8"),
    (b'{"text": 3}\n', "string field \\\"text\\\""),
    (b"not json\n", "line 1 is not JSON"),
    (b'{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}\n', "id '1' appears twice"),
    (b"\n\n", "only blank lines"),
])
def test_bad_corpora_are_refused(tmp_path, content, match):
    p = tmp_path / "c.jsonl"
    p.write_bytes(content)
    with pytest.raises(CorpusError, match=match):
        read_corpus(p)


def test_a_long_line_is_refused_before_it_is_read_whole(tmp_path):
    import tracemalloc

    p = tmp_path / "c.txt"
    with p.open("wb") as f:
        f.write(b"short\n")
        f.write(b"x" * (64 << 20))  # a 64 MiB line
    tracemalloc.start()
    try:
        with pytest.raises(CorpusError, match="line 2 is longer than 4096 bytes"):
            read_corpus(p, max_line_bytes=4096)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # never the whole line in memory


def test_lists_and_missing_files():
    c = corpus_of(["a", " ", "b"])
    assert c.ids == ("1", "3") and c.skipped == 1
    with pytest.raises(CorpusError, match="text 2 must be a string"):
        corpus_of(["a", 3])
    with pytest.raises(CorpusError, match="is not a file"):
        read_corpus("/no/such/corpus.txt")
    assert c.fingerprint() != corpus_of(["a", "c"]).fingerprint()


def test_stdlib_corpus_is_prose():
    texts = stdlib_corpus()
    assert len(texts) > 500 and texts == stdlib_corpus()
    assert all("\n" not in t and len(t.split()) >= 20 for t in texts)
