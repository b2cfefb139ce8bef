"""URL rules: what may enter a sitemap, and its one canonical spelling (invariant 9)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemap_updater.domain.errors import InvalidEvent
from sitemap_updater.domain.urls import MAX_URL_LENGTH, Site, check_characters, normalise_url

SITE = Site.parse("https://www.example.com")
ORIGIN = "https://www.example.com"


def reject_code(raw: str, site: Site = SITE, **kwargs: object) -> str:
    with pytest.raises(InvalidEvent) as caught:
        normalise_url(raw, site, **kwargs)  # type: ignore[arg-type]
    return caught.value.code


# --- Site.parse ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("site_url", "scheme", "host", "port", "origin"),
    [
        ("https://www.example.com", "https", "www.example.com", None, "https://www.example.com"),
        ("https://www.example.com/", "https", "www.example.com", None, "https://www.example.com"),
        ("HTTPS://WWW.Example.COM", "https", "www.example.com", None, "https://www.example.com"),
        ("  https://www.example.com  ", "https", "www.example.com", None, ORIGIN),
        ("https://www.example.com:443", "https", "www.example.com", None, ORIGIN),
        ("http://www.example.com:80/", "http", "www.example.com", None, "http://www.example.com"),
        ("http://localhost:8080", "http", "localhost", 8080, "http://localhost:8080"),
        ("https://www.example.com:80", "https", "www.example.com", 80, ORIGIN + ":80"),
        ("https://www.example.com.", "https", "www.example.com", None, ORIGIN),
        ("https://Bücher.example", "https", "xn--bcher-kva.example", None, None),
        ("https://xn--bcher-kva.example", "https", "xn--bcher-kva.example", None, None),
    ],
)
def test_site_parse_accepts_origins(
    site_url: str, scheme: str, host: str, port: int | None, origin: str | None
) -> None:
    site = Site.parse(site_url)
    assert (site.scheme, site.host, site.port) == (scheme, host, port)
    assert site.origin == (origin or f"{scheme}://{host}")


@pytest.mark.parametrize(
    "site_url",
    [
        "ftp://www.example.com",
        "www.example.com",
        "//www.example.com",
        "https://www.example.com/blog",
        "https://www.example.com/?q=1",
        "https://www.example.com/#top",
        "https://www.example.com#",
        "https://user@www.example.com",
        "https://user:secret@www.example.com",
        "https://",
        "https://www.example.com:http",
        "https://www.example.com:70000",
        "https://www.example.com:0",
        # Hosts no URL can hold: each origin would go into every <loc>, the index and
        # robots.txt, and no event could ever match it.
        "https://www.exa mple.com",
        "https://www.example.com;",
        "https://www.exa<mple.com",
        "https://www.example.com%2F",
        "https://www..example.com",
        "https://-www.example.com",
        # An IPv6 literal: its brackets were lost, giving http://::1:8443/... locs.
        "https://[::1]:8443",
        "https://[2001:db8::1]",
    ],
)
def test_site_parse_rejects_anything_but_an_origin(site_url: str) -> None:
    with pytest.raises(ValueError, match="site URL"):
        Site.parse(site_url)


@pytest.mark.parametrize("site_url", ["https://www.example.com#", "https://www.example.com#top"])
def test_a_site_url_with_a_fragment_is_told_it_must_be_an_origin(site_url: str) -> None:
    with pytest.raises(ValueError, match="must be an origin"):
        Site.parse(site_url)


def test_site_url_for_is_an_absolute_url_at_the_root() -> None:
    assert SITE.url_for("sitemap.xml") == "https://www.example.com/sitemap.xml"
    site = Site.parse("http://localhost:8080/")
    assert site.url_for("robots.txt") == "http://localhost:8080/robots.txt"


def test_site_is_a_comparable_value() -> None:
    assert Site.parse("https://WWW.EXAMPLE.COM:443/") == SITE
    assert hash(Site.parse("https://www.example.com")) == hash(SITE)


# --- normalisation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        # scheme and host lower-cased, path case kept
        ("HTTPS://WWW.EXAMPLE.COM/About-Us", "https://www.example.com/About-Us"),
        # empty path becomes "/"
        ("https://www.example.com", "https://www.example.com/"),
        ("https://www.example.com?q=1", "https://www.example.com/?q=1"),
        # default port dropped, trailing dot of the host dropped
        ("https://www.example.com:443/a", "https://www.example.com/a"),
        ("https://www.example.com./a", "https://www.example.com/a"),
        ("https://www.example.com:/a", "https://www.example.com/a"),
        # non-ASCII in path and query: UTF-8, upper-case hex
        ("https://www.example.com/café", "https://www.example.com/caf%C3%A9"),
        (
            "https://www.example.com/日本語/ページ",
            "https://www.example.com/%E6%97%A5%E6%9C%AC%E8%AA%9E/%E3%83%9A%E3%83%BC%E3%82%B8",
        ),
        ("https://www.example.com/😀", "https://www.example.com/%F0%9F%98%80"),
        (
            "https://www.example.com/s?q=über&lang=de",
            "https://www.example.com/s?q=%C3%BCber&lang=de",
        ),
        # existing escapes upper-cased, never decoded
        ("https://www.example.com/caf%c3%a9", "https://www.example.com/caf%C3%A9"),
        ("https://www.example.com/a%2fb?x=%3d", "https://www.example.com/a%2Fb?x=%3D"),
        ("https://www.example.com/%41", "https://www.example.com/%41"),
        # ASCII outside RFC 3986's set is escaped too
        ("https://www.example.com/a[1]{2}|^`", "https://www.example.com/a%5B1%5D%7B2%7D%7C%5E%60"),
        # sub-delims, ":" and "@" stay as they are; "?" and "/" stay in the query
        ("https://www.example.com/a;b=c,d!$&()*+:@~", "https://www.example.com/a;b=c,d!$&()*+:@~"),
        ("https://www.example.com/s?a=1&b=2?c/d", "https://www.example.com/s?a=1&b=2?c/d"),
        # an empty query is dropped
        ("https://www.example.com/a?", "https://www.example.com/a"),
        # dots that are not dot segments
        ("https://www.example.com/.well-known/x", "https://www.example.com/.well-known/x"),
        ("https://www.example.com/a..b/.../c.", "https://www.example.com/a..b/.../c."),
        ("https://www.example.com/s?next=../up", "https://www.example.com/s?next=../up"),
    ],
)
def test_normalise_url_canonical_forms(raw: str, canonical: str) -> None:
    assert normalise_url(raw, SITE) == canonical
    assert normalise_url(canonical, SITE) == canonical  # idempotent


def test_idn_host_is_compared_and_written_in_its_ascii_form() -> None:
    unicode_site = Site.parse("https://bücher.example")
    ascii_site = Site.parse("https://xn--bcher-kva.example")
    expected = "https://xn--bcher-kva.example/katalog/%C3%BCber"
    for site in (unicode_site, ascii_site):
        assert normalise_url("https://BÜCHER.example/katalog/über", site) == expected
        assert normalise_url("https://xn--bcher-kva.example/katalog/über", site) == expected
    assert reject_code("https://bucher.example/", unicode_site) == "url_foreign_host"


@pytest.mark.parametrize("host", ["straße.example", "STRASSE-ẞ.example", "ας.example"])
def test_a_host_the_idna_rule_sets_map_to_two_domains_is_refused_not_guessed(host: str) -> None:
    """IDNA 2003 spells 'straße' as 'strasse', browsers (UTS 46) as 'xn--strae-oqa': a
    guess could put another domain in the sitemap, as the site or as an image's host."""
    with pytest.raises(ValueError, match=r"site URL host .* \(xn--\) form"):
        Site.parse(f"https://{host}")
    with pytest.raises(InvalidEvent, match=r"image_loc host .* \(xn--\) form") as caught:
        normalise_url(f"https://{host}/a.jpg", SITE, "image_loc", same_site=False)
    assert caught.value.code == "image_loc_malformed"
    assert reject_code(f"https://{host}/page") == "url_malformed"
    # The ASCII form is the domain itself, and ß in a path is only percent-encoded.
    assert Site.parse("https://xn--strae-oqa.example").host == "xn--strae-oqa.example"
    assert normalise_url(f"{ORIGIN}/straße", SITE) == f"{ORIGIN}/stra%C3%9Fe"


@pytest.mark.parametrize("host", ["ΚΟΣ.example", "example.ΚΟΣ", "ΑΣ-1.example"])
def test_a_capital_sigma_ending_a_label_is_not_taken_for_a_final_sigma(host: str) -> None:
    """str.lower() (urllib's hostname too) writes a capital sigma that ends a word as ς,
    but both IDNA rule sets map it to a plain small sigma: one domain, accepted as it was."""
    expected = host.lower().replace("\u03c2", "\u03c3").encode("idna").decode()
    assert Site.parse(f"https://{host}").host == expected
    image = normalise_url(f"https://{host}/a.jpg", SITE, "image_loc", same_site=False)
    assert image == f"https://{expected}/a.jpg"


def test_site_with_a_port_accepts_only_that_port() -> None:
    site = Site.parse("http://localhost:8080")
    assert normalise_url("HTTP://LocalHost:8080", site) == "http://localhost:8080/"
    assert reject_code("http://localhost/", site) == "url_foreign_port"
    assert reject_code("http://localhost:80/", site) == "url_foreign_port"
    assert reject_code("http://localhost:8081/", site) == "url_foreign_port"


def test_a_foreign_port_is_named_as_a_number_on_both_sides() -> None:
    """An absent port is the scheme's: never "port None" in the reason a CMS reads."""
    with pytest.raises(InvalidEvent) as on_default:
        normalise_url("https://www.example.com:444/a", Site.parse("https://www.example.com"))
    assert on_default.value.detail == "url port 444 is not the site's port 443"
    with pytest.raises(InvalidEvent) as to_default:
        normalise_url("http://localhost/a", Site.parse("http://localhost:8080"))
    assert to_default.value.detail == "url port 80 is not the site's port 8080"


def test_url_of_exactly_the_maximum_length_is_accepted() -> None:
    raw = f"{ORIGIN}/{'a' * (MAX_URL_LENGTH - len(ORIGIN) - 1)}"
    assert len(raw) == MAX_URL_LENGTH
    assert normalise_url(raw, SITE) == raw


def test_length_is_measured_after_percent_encoding() -> None:
    # 500 characters in, 24 + 3,000 out.
    assert reject_code(f"{ORIGIN}/{'é' * 500}") == "url_too_long"
    # 340 "é" -> 24 + 2,040 = 2,064 characters; 337 -> 2,046: fits.
    assert reject_code(f"{ORIGIN}/{'é' * 340}") == "url_too_long"
    assert len(normalise_url(f"{ORIGIN}/{'é' * 337}", SITE)) == 24 + 337 * 6


# --- the rejection matrix -------------------------------------------------------------------

P = ORIGIN + "/page"

REJECTIONS = [
    # not absolute http(s)
    ("relative-path", "/page", "url_not_absolute"),
    ("no-scheme", "www.example.com/page", "url_not_absolute"),
    ("scheme-relative", "//www.example.com/page", "url_not_absolute"),
    ("one-slash", "https:/www.example.com/page", "url_not_absolute"),
    ("no-slashes", "https:www.example.com/page", "url_not_absolute"),
    ("no-authority", "https:///page", "url_not_absolute"),
    ("ftp", "ftp://www.example.com/page", "url_not_http"),
    ("javascript", "javascript:alert(1)", "url_not_http"),
    ("mailto", "mailto:someone@example.com", "url_not_http"),
    ("data", "data:text/html,hello", "url_not_http"),
    ("file", "file:///etc/passwd", "url_not_http"),
    # other scheme, host or port than the site's
    ("http-on-https-site", "http://www.example.com/page", "url_wrong_scheme"),
    ("other-host", "https://evil.example.net/page", "url_foreign_host"),
    ("bare-domain", "https://example.com/page", "url_foreign_host"),
    ("suffix-host", "https://www.example.com.evil.net/page", "url_foreign_host"),
    ("ip-host", "https://93.184.216.34/page", "url_foreign_host"),
    ("other-port", "https://www.example.com:8443/page", "url_foreign_port"),
    ("http-port-on-https", "https://www.example.com:80/page", "url_foreign_port"),
    # unparseable authority
    ("port-too-big", "https://www.example.com:99999/page", "url_malformed"),
    ("port-not-number", "https://www.example.com:https/page", "url_malformed"),
    ("no-host", "https://:443/page", "url_malformed"),
    ("idna-label-too-long", f"https://{'ü' * 70}.example/", "url_malformed"),
    ("broken-ipv6", "https://[::1/page", "url_malformed"),
    # userinfo
    ("user", "https://user@www.example.com/page", "url_userinfo"),
    ("user-password", "https://user:pw@www.example.com/page", "url_userinfo"),
    ("host-as-userinfo", "https://www.example.com@evil.net/page", "url_userinfo"),
    # fragment
    ("fragment", P + "#top", "url_fragment"),
    ("empty-fragment", P + "#", "url_fragment"),
    ("fragment-after-query", P + "?a=1#b", "url_fragment"),
    # length, after normalisation
    ("too-long", f"{ORIGIN}/{'a' * (MAX_URL_LENGTH - len(ORIGIN))}", "url_too_long"),
    ("too-long-query", f"{P}?q={'x' * MAX_URL_LENGTH}", "url_too_long"),
    ("too-long-encoded", f"{ORIGIN}/{'日' * 700}", "url_too_long"),
    # whitespace
    ("space", P + " x", "url_whitespace"),
    ("leading-space", " " + P, "url_whitespace"),
    ("trailing-newline", P + "\n", "url_whitespace"),
    ("tab", P + "\tx", "url_whitespace"),
    ("carriage-return", P + "\rx", "url_whitespace"),
    ("nbsp", P + "\u00a0x", "url_whitespace"),
    ("em-space", P + "\u2003x", "url_whitespace"),
    ("ideographic-space", P + "\u3000x", "url_whitespace"),
    ("line-separator", P + "\u2028x", "url_whitespace"),
    ("zero-width-space", P + "\u200bx", "url_whitespace"),
    # control characters, C0 and C1
    ("nul", P + "\x00", "url_control_character"),
    ("soh", P + "\x01x", "url_control_character"),
    ("escape", P + "\x1b[31m", "url_control_character"),
    ("unit-separator", P + "\x1fx", "url_control_character"),
    ("delete", P + "\x7fx", "url_control_character"),
    ("nel-u0085", P + "\x85x", "url_control_character"),
    ("c1-u009f", P + "\x9fx", "url_control_character"),
    # characters no sitemap URL may hold
    ("less-than", P + "<script>", "url_forbidden_character"),
    ("greater-than", P + ">x", "url_forbidden_character"),
    ("double-quote", P + '"x', "url_forbidden_character"),
    ("backslash", P + "\\x", "url_forbidden_character"),
    ("backslash-authority", "https://www.example.com\\@evil.net/", "url_forbidden_character"),
    # characters XML 1.0 forbids
    ("lone-high-surrogate", P + "\ud800", "url_xml_illegal_character"),
    ("lone-low-surrogate", P + "\udfffx", "url_xml_illegal_character"),
    ("ufffe", P + "\ufffe", "url_xml_illegal_character"),
    ("uffff", P + "\uffff", "url_xml_illegal_character"),
    # bidirectional controls
    ("rlo-u202e", P + "\u202etxt.exe", "url_bidi_control"),
    ("lri-u2066", P + "\u2066x", "url_bidi_control"),
    ("pdi-u2069", P + "\u2069x", "url_bidi_control"),
    ("lrm-u200e", P + "\u200ex", "url_bidi_control"),
    ("alm-u061c", P + "\u061cx", "url_bidi_control"),
    # bad percent escapes
    ("lone-percent", P + "%", "url_bad_percent_encoding"),
    ("one-hex-digit", P + "%4", "url_bad_percent_encoding"),
    ("non-hex", P + "%zz", "url_bad_percent_encoding"),
    ("half-hex", P + "%4g", "url_bad_percent_encoding"),
    ("percent-in-query", P + "?discount=50%", "url_bad_percent_encoding"),
    ("percent-non-ascii", P + "%é1", "url_bad_percent_encoding"),
    # dot segments, literal or escaped
    ("dot", ORIGIN + "/./page", "url_dot_segment"),
    ("dot-dot", ORIGIN + "/a/../page", "url_dot_segment"),
    ("leading-dot-dot", ORIGIN + "/../../etc/passwd", "url_dot_segment"),
    ("trailing-dot", ORIGIN + "/a/.", "url_dot_segment"),
    ("trailing-dot-dot", ORIGIN + "/a/..", "url_dot_segment"),
    ("escaped-dot-dot", ORIGIN + "/a/%2e%2E/page", "url_dot_segment"),
    ("half-escaped-dot-dot", ORIGIN + "/a/.%2E/page", "url_dot_segment"),
    ("escaped-dot", ORIGIN + "/a/%2E", "url_dot_segment"),
]


@pytest.mark.parametrize(
    ("raw", "code"), [r[1:] for r in REJECTIONS], ids=[r[0] for r in REJECTIONS]
)
def test_normalise_url_rejects_with_a_specific_code(raw: str, code: str) -> None:
    with pytest.raises(InvalidEvent) as caught:
        normalise_url(raw, SITE)
    assert caught.value.code == code
    assert caught.value.detail
    assert caught.value.reason == f"{code}: {caught.value.detail}"


def test_codes_carry_the_field_name() -> None:
    assert reject_code(P + " x", field="image") == "image_whitespace"
    assert reject_code("ftp://www.example.com/", field="image") == "image_not_http"
    assert reject_code(P + "#x", field="video") == "video_fragment"


# --- other sites' URLs (same_site=False) ------------------------------------------------------


def test_same_site_false_allows_other_hosts_but_keeps_every_other_rule() -> None:
    assert (
        normalise_url("http://CDN.Example.NET:8080/img/ä.png", SITE, same_site=False)
        == "http://cdn.example.net:8080/img/%C3%A4.png"
    )
    assert reject_code("ftp://cdn.example.net/a.png", same_site=False) == "url_not_http"
    # One host rule for every field: DNS labels of letters, digits, '-' and '_', 1 to 63
    # characters, 253 in all (what DNS resolves and browsers and CDNs request).
    cdn = "https://cdn_1.example.net/a.png"
    assert normalise_url(cdn, SITE, same_site=False) == cdn
    assert reject_code(f"https://{'a' * 64}.example.net/a.png", same_site=False) == "url_malformed"
    long_host = ".".join(["a" * 63] * 4)  # 255 characters
    assert reject_code(f"https://{long_host}/a.png", same_site=False) == "url_malformed"
    assert normalise_url(f"https://{long_host[:253]}/a.png", SITE, same_site=False)
    assert reject_code("https://cdn.example.net/a b.png", same_site=False) == "url_whitespace"
    assert reject_code("https://u@cdn.example.net/a.png", same_site=False) == "url_userinfo"


# --- check_characters -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["", "https://www.example.com/a?b=c&d=e", "日本語/ünïcödé/😀", "%zz-is-not-its-concern"]
)
def test_check_characters_passes_printable_text(text: str) -> None:
    assert check_characters(text) is None


@pytest.mark.parametrize(
    ("char", "code"),
    [
        (" ", "whitespace"),
        ("\u00a0", "whitespace"),
        ("\n", "whitespace"),
        ("\x00", "control_character"),
        ("\x85", "control_character"),
        ("<", "forbidden_character"),
        ("\ud83d", "xml_illegal_character"),
        ("\u202e", "bidi_control"),
    ],
)
def test_check_characters_names_the_field(char: str, code: str) -> None:
    with pytest.raises(InvalidEvent) as caught:
        check_characters(f"ok{char}ok", field="image_loc")
    assert caught.value.code == f"image_loc_{code}"


# --- properties -----------------------------------------------------------------------------


def _normalised_or_reason(raw: str) -> str | InvalidEvent:
    try:
        return normalise_url(raw, SITE)
    except InvalidEvent as exc:
        return exc


@given(path=st.text(max_size=300), query=st.none() | st.text(max_size=100))
def test_every_accepted_url_is_canonical_ascii_and_short(path: str, query: str | None) -> None:
    raw = f"{ORIGIN}/{path}" + ("" if query is None else f"?{query}")
    url = _normalised_or_reason(raw)
    if isinstance(url, InvalidEvent):
        assert url.code.startswith("url_")
        return
    assert url.isascii()
    assert len(url) <= MAX_URL_LENGTH
    assert url.startswith(ORIGIN + "/")
    assert not any(char in url for char in ' "<>\\#')
    assert normalise_url(url, SITE) == url  # canonical: normalising again changes nothing


# --- what browsers request as it is, is kept as it is ---------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/wiki/Ender's_Game",
        "/authors/o'brien",
        "/search?q=rock'n'roll&sort=new",
        "/a!$&'()*+,;=:@b",
        "/p(1)/x*y?k=v;w=z,t",
        "/%E2%82%AC/%27quoted%27",
    ],
)
def test_rfc3986_sub_delims_and_escapes_are_kept_byte_for_byte(path: str) -> None:
    url = f"{ORIGIN}{path}"
    assert normalise_url(url, SITE) == url
    assert normalise_url(url.replace(ORIGIN, "https://cdn.example.net"), SITE, same_site=False)


def test_the_length_limit_is_on_the_normalised_url() -> None:
    # ':443' goes: 2,052 characters as written, 2,048 as listed.
    tail = "a" * (MAX_URL_LENGTH - len(ORIGIN) - 1)
    assert normalise_url(f"https://www.example.com:443/{tail}", SITE) == f"{ORIGIN}/{tail}"
    image = f"https://cdn.example.net:443/{'b' * (MAX_URL_LENGTH - 24)}"
    assert len(normalise_url(image, SITE, "image", same_site=False)) == MAX_URL_LENGTH
    assert reject_code(f"https://www.example.com:443/{tail}a") == "url_too_long"


def test_the_quick_path_for_canonical_urls_agrees_with_the_rules() -> None:
    """A URL already canonical is returned at once; these are the ones it must not take."""
    for raw, expected in [
        (f"{ORIGIN}/a/./b", "url_dot_segment"),
        (f"{ORIGIN}/a/%2E%2E/b", "url_dot_segment"),
        (f"{ORIGIN}/a%zz", "url_bad_percent_encoding"),
    ]:
        assert reject_code(raw) == expected
    assert normalise_url(f"{ORIGIN}/a%2fb", SITE) == f"{ORIGIN}/a%2Fb"
    assert normalise_url(f"{ORIGIN}/.well-known/a", SITE) == f"{ORIGIN}/.well-known/a"


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_a_url_returned_is_returned_unchanged_when_given_again(tail: str) -> None:
    try:
        url = normalise_url(f"{ORIGIN}/{tail}", SITE)
    except InvalidEvent:
        return
    assert normalise_url(url, SITE) == url
    assert url.isascii()


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_the_quick_path_gives_what_the_rules_give(tail: str) -> None:
    # An upper-case origin is never taken as it is: the same URL through the rules alone.
    quick, ruled = (_normalised_or_reason(f"{o}/{tail}") for o in (ORIGIN, ORIGIN.upper()))
    if isinstance(ruled, InvalidEvent):
        assert isinstance(quick, InvalidEvent)
        assert quick.code == ruled.code
    else:
        assert quick == ruled
