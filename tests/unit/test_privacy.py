"""The masking core: which paths are personal, what a mask holds, the key. No Spark."""

import json

import pytest

from foodtaster import privacy
from foodtaster.privacy import Masker, PersonalPathError, personal_pattern
from foodtaster.registry import RegistryError, _dataset_from_entry, get_dataset

KEY = b"k" * 32
MASKER = Masker.of(["data.customer.email", "data.customer.address", "data.lines[].recipient",
                    'meta["e.mail"]'], KEY)
MESSAGE = {
    "id": "e-1",
    "data": {
        "customer": {"id": "c-00001", "email": "ann.smith@example.com",
                     "address": {"street": "1 Elm St", "zip": "12345"}},
        "lines": [{"sku": "A", "recipient": "+44 20 7946 0958"}, {"sku": "B", "recipient": "Bob Jones"}],
    },
    "meta": {"e.mail": "x@y.z", "e": "kept"},
}
PLANTED = ("ann.smith@example.com", "1 Elm St", "12345", "+44 20 7946 0958", "Bob Jones", "x@y.z")


def test_personal_paths_their_elements_and_what_lies_under_them():
    assert MASKER.is_personal("data.customer.email")
    assert MASKER.is_personal("data.customer.address.zip")  # under a personal object
    assert MASKER.is_personal("data.lines[3].recipient") and MASKER.is_personal("data.lines[].recipient")
    assert MASKER.is_personal('meta["e.mail"]') and not MASKER.is_personal("meta.e")
    assert not MASKER.is_personal("data.customer.id") and not MASKER.is_personal("data.lines[0].sku")
    assert MASKER.holds_personal("data.customer") and MASKER.holds_personal("data.lines[1]")
    assert not MASKER.holds_personal("data.customer.id") and not MASKER.holds_personal("id")


def test_a_message_shows_its_shape_and_never_a_personal_value():
    shown = MASKER.message(json.dumps(MESSAGE).encode())
    for value in PLANTED:
        assert value not in shown
    view = json.loads(shown)
    assert view["id"] == "e-1" and view["data"]["customer"]["id"] == "c-00001"
    assert view["data"]["lines"][0]["sku"] == "A" and view["meta"]["e"] == "kept"
    assert view["data"]["customer"]["email"].startswith("‹personal: email, 21 chars, #")
    assert view["data"]["customer"]["address"].startswith("‹personal: object, 2 keys, #")
    assert view["data"]["lines"][0]["recipient"].startswith("‹personal: phone, 16 chars, #")
    assert view["data"]["lines"][1]["recipient"].startswith("‹personal: text, 9 chars, #")


def test_the_same_value_the_same_mask_another_key_another_mask():
    one = MASKER.value("data.customer.email", "ann.smith@example.com")
    assert one == MASKER.value("data.customer.email", "ann.smith@example.com")
    assert one != MASKER.value("data.customer.email", "ann.smyth@example.com")
    other = Masker.of(MASKER.patterns, b"another key")
    assert other.value("data.customer.email", "ann.smith@example.com") != one
    assert MASKER.value("data.customer.id", "c-00001") == "c-00001"  # not personal: itself
    assert MASKER.value("data.customer.email", None) is None


@pytest.mark.parametrize(("raw", "why"), [
    (b"{'email': 'ann.smith@example.com'}", "not JSON"),
    (b'["ann.smith@example.com"]', "not a JSON object"),
    (b"\xff ann.smith@example.com", "not UTF-8"),
])
def test_a_line_that_is_no_json_object_shows_none_of_its_bytes(raw, why):
    shown = MASKER.message(raw)
    assert "ann" not in shown and "example" not in shown
    assert shown.startswith(f"‹not shown: {len(raw)} bytes, {why}, #")
    assert shown == MASKER.message(raw)


def test_a_deeply_nested_message_is_shown_never_a_crash():
    deep = b'{"a":' * 900 + b"1" + b"}" * 900
    assert json.loads(MASKER.message(deep)) == json.loads(deep)  # nothing personal on the way
    deeper = b'{"a":' * 5000 + b"1" + b"}" * 5000
    assert MASKER.message(deeper).startswith(f"‹not shown: {len(deeper)} bytes, ")


def test_a_reason_value_text_masked_where_it_holds_anything_personal():
    assert MASKER.text("data.customer.email", '"ann.smith@example.com"') == \
        MASKER.mask("ann.smith@example.com")  # a JSON string's characters are hashed
    whole = MASKER.text("data.customer", json.dumps(MESSAGE["data"]["customer"]))
    assert "ann.smith" not in whole and "Elm" not in whole and '"id":"c-00001"' in whole
    assert MASKER.text("data.customer.id", "c-00001") == "c-00001"
    assert "Bob" not in MASKER.text("data.lines", "not json: Bob Jones")


def test_a_checks_own_words_on_a_message_lose_that_messages_personal_values():
    raw = json.dumps(MESSAGE).encode()
    words = ("ValueError: no route for ann.smith@example.com at {'street': '1 Elm St', 'zip': '12345'} "
             "to Bob Jones, sku B, customer c-00001")
    scrubbed = MASKER.scrub(words, raw)
    for value in ("ann.smith@example.com", "1 Elm St", "12345", "Bob Jones"):
        assert value not in scrubbed
    assert MASKER.mask("ann.smith@example.com") in scrubbed and MASKER.mask("Bob Jones") in scrubbed
    assert scrubbed.startswith("ValueError: no route for ‹personal: email, 21 chars, #")
    assert scrubbed.endswith("to ‹personal: text, 9 chars, #" + MASKER.digest("Bob Jones")
                             + "›, sku B, customer c-00001")  # what is not personal stays
    # The words of another message, or of a line that is no JSON object, cannot be told: as they are.
    assert MASKER.scrub(words, b"not json") == words and MASKER.scrub(words, b"[1]") == words
    assert Masker.of([], b"").scrub(words, raw) == words


def test_personal_paths_refused_by_name_when_they_name_no_pattern():
    assert personal_pattern("data.lines[].recipient") == "data.lines[].recipient"
    for bad, words in (("data.lines[2].recipient", "every element"), ("data..x", "empty key"), ("", "empty"),
                       ("data.a[b", "'['")):
        with pytest.raises(PersonalPathError, match="personal") as caught:
            personal_pattern(bad)
        assert words in str(caught.value)


def test_the_registry_list_is_read_and_checked():
    entry = {"contract": "contracts.orders:Orders", "expectation_suite": "expectations/orders.json"}
    config = _dataset_from_entry("things", {**entry, "personal": ["data.lines[].recipient"]}, {})
    assert config.personal == ("data.lines[].recipient",)
    with pytest.raises(PersonalPathError, match="dataset 'things': personal"):
        _dataset_from_entry("things", {**entry, "personal": ["data.lines[0].recipient"]}, {})
    with pytest.raises(RegistryError, match="personal is a list of strings"):
        _dataset_from_entry("things", {**entry, "personal": "data.email"}, {})


@pytest.mark.parametrize(("dataset", "marked"), [
    ("order_events", {"data.customer.email", "data.customer.address"}),
    ("customers", {"name", "email"}),
    ("payment_events", {"data.object.billing_details.email", "data.object.billing_details.name",
                        "data.object.billing_details.address", "data.object.receipt_email"}),
])
def test_the_bundled_datasets_mark_theirs(dataset, marked, tmp_path, monkeypatch):
    monkeypatch.delenv(privacy.KEY_ENV, raising=False)
    masker = Masker.for_dataset(get_dataset(dataset), str(tmp_path))
    assert marked <= masker.patterns
    assert masker.key and masker.key == Masker.for_dataset(get_dataset(dataset), str(tmp_path)).key


def test_the_key_from_the_environment_or_made_once_in_the_lake(tmp_path, monkeypatch):
    monkeypatch.delenv(privacy.KEY_ENV, raising=False)
    made = privacy._lake_key(str(tmp_path / "_state" / "mask_key"))
    again = privacy._lake_key(str(tmp_path / "_state" / "mask_key"))
    assert made == again and len(made) == 32
    assert len(list((tmp_path / "_state" / "mask_key").iterdir())) == 1
    # `contract check` says whose key it masks with (never the key), to compare with the job's
    assert privacy.key_source(str(tmp_path)) == f"the mask key of the lake at {tmp_path} (_state/mask_key/)"
    monkeypatch.setenv(privacy.KEY_ENV, "a key an operator chose")
    assert privacy.mask_key(str(tmp_path)) == b"a key an operator chose"
    assert privacy.key_source(str(tmp_path)) == "the key in FOODTASTER_MASK_KEY"
    assert made.hex() not in repr(Masker.of(["email"], made))  # never printed
