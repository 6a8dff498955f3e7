"""A document after the answer's first takes at most ``LATER_SHARE`` (2/5) of the budget
(``search.packing`` rule 2): a long section ranked second comes back as its best
excerpt, so the section ranked third still fits; the first document goes in whole when it
fits, however long."""

from __future__ import annotations

from doc_index.search.native_selection import select
from doc_index.search.packing import LATER_SHARE, doc_charge, frame_charge
from doc_index.store.native_cache import NativeCache

FILLER = ("Each statement lists the month's invoices with their totals and the taxes "
          "applied, grouped by customer and sorted by the date they were issued. ")
DOCS = {
    "short.md": ("# Retrying failed invoice e-mails\n\nA failed invoice e-mail is retried "
                 "three times, then the invoice is marked for a person to look at.\n"),
    "long.md": ("# Retrying failed invoice e-mails in depth\n\n"
                + "".join(f"{FILLER}Retried invoice e-mails, part {i}.\n\n" for i in range(36))),
    "medium.md": ("# Schedule\n\nA failed invoice message is sent again after one, five and thirty "
                  "minutes, then retried no more: retried twice at most. " + FILLER * 2 + "\n"),
}
QUERY = "retry a failed invoice e-mail"


def charges(result: dict) -> list[int]:
    return [doc_charge(d) for d in result["documents"]]


def test_a_long_section_after_the_first_is_cut_to_its_share(cache: NativeCache) -> None:
    whole = {d["id"]: d for d in select(cache, QUERY, 100_000)["documents"]}
    assert list(whole) == ["short-retrying-failed-invoice-e-mails",
                           "long-retrying-failed-invoice-e-mails-in-depth", "medium-schedule"]
    budget = 2000
    num, den = LATER_SHARE
    long_id = "long-retrying-failed-invoice-e-mails-in-depth"
    assert doc_charge(whole[long_id]) > budget * num // den  # it would take the room
    result = select(cache, QUERY, budget)
    docs = result["documents"]
    # The third-ranked section is in the answer beside an excerpt of the second.
    assert [d["id"] for d in docs] == list(whole)
    assert "excerpt" in docs[1]["source"] and "excerpt" not in docs[2]["source"]
    assert charges(result)[1] <= budget * num // den
    sel = result["selection"]
    assert frame_charge(QUERY, budget, sel["documents_considered"]) + sum(
        charges(result)) <= budget


def test_the_first_document_goes_in_whole_however_long(cache: NativeCache) -> None:
    query = "invoice e-mail retries in depth, part 7"
    result = select(cache, query, 2000)
    first = result["documents"][0]
    assert first["id"] == "long-retrying-failed-invoice-e-mails-in-depth"
    assert "excerpt" not in first["source"] and doc_charge(first) > 2000 * 2 // 5
