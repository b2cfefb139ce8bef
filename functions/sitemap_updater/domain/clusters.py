"""hreflang clusters (docs/EVENTS.md#hreflang-clusters), pure. The registry keeps one record per
group of pages linked by declarations; every entry is rendered from it, so each cluster is
complete and reciprocal. Components are recomputed from the current declarations at every
rendering, and an unpublished member declares nothing. A member's entry grows with its
cluster: ``base`` is its size without alternates; ``reserved`` stays at or above its render.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from msgspec import Struct

from sitemap_updater.domain.contract import X_DEFAULT
from sitemap_updater.domain.errors import RetryableError
from sitemap_updater.domain.render import render_links, rendered_size

MAX_CLUSTER_MEMBERS = 64
# Redirects a read follows from a cluster id to its cluster: merges keep any pointer within
# log2(MAX_CLUSTER_MEMBERS) = 6 (see ``survivor``); more means the registry is inconsistent.
MAX_REDIRECTS = 16


class Member(Struct, frozen=True, gc=False):
    """A page of a cluster (a struct: made ten times faster than a frozen dataclass)."""

    lang: str | None = None  # the page's own hreflang, when its event gives one
    declares: tuple[tuple[str, str], ...] = ()  # (hreflang, href) it declares, sorted
    live: bool = False
    shard: str | None = None
    base: int = 0  # bytes of its entry without alternates
    reserved: int = 0  # bytes its shard holds for it


@dataclass(frozen=True)
class Cluster:
    cid: str
    version: int = 0  # grows with every change (the registry's compare-and-set)
    members: Mapping[str, Member] | None = None
    # The last version whose siblings' shards were all marked for rebuild: a change that alters
    # no sibling's alternates may skip them only when nothing before it left them unmarked.
    settled: int = 0

    @property
    def all(self) -> Mapping[str, Member]:
        return self.members or {}


Pairs = tuple[tuple[str, str], ...]


def listings(cluster: Cluster) -> dict[str, Pairs]:
    """What each member's entry lists, for the members that list anything: the (hreflang,
    href) pairs of every published member of its component that has a language, itself
    included, provided they name two pages or more.

    A language claimed by two pages of one component (two pages both ``x-default``, or two
    declarations of ``de``) is listed once, for the smaller URL: a crawler reading two hrefs
    for one language would ignore both.
    """
    members = cluster.all
    declared: dict[str, set[str]] = {}
    parent: dict[str, str] = {}  # union-find over declarations, a root maps to itself or not at all
    for source, member in members.items():
        root = None  # the source's, found once: a union keeps it a root
        for lang, href in member.declares:
            if href in declared:
                declared[href].add(lang)
            else:
                declared[href] = {lang}
            if href in members:
                root = root or _root(parent, source)
                parent[_root(parent, href)] = root
    components: dict[str, list[str]] = {}  # of the members that list: published, with a language
    for url, member in members.items():
        if member.live and (member.lang is not None or url in declared):
            components.setdefault(_root(parent, url) if url in parent else url, []).append(url)
    result: dict[str, Pairs] = {}
    for urls in components.values():
        if len(urls) < 2:
            continue
        owner: dict[str, str] = {}
        for url in sorted(urls):
            for lang in _languages(members[url].lang, declared.get(url, ())):
                owner.setdefault(lang, url)
        if len(set(owner.values())) > 1:
            listed = tuple(sorted(owner.items()))
            result.update(dict.fromkeys(urls, listed))
    return result


def _root(parent: dict[str, str], url: str) -> str:
    up = parent.get(url, url)
    while up != url:
        parent[url] = parent.get(up, up)  # path halving
        url = parent[url]
        up = parent.get(url, url)
    return url


def _languages(lang: str | None, declared: Collection[str]) -> Collection[str]:
    """A member's languages: its own hreflang (and x-default if a sibling declares it so),
    or else every language its siblings declare for it."""
    if lang is None:
        return declared
    return (lang, X_DEFAULT) if X_DEFAULT in declared else (lang,)


def alternates_bytes(pairs: Iterable[tuple[str, str]]) -> int:
    """Bytes the pairs add to an entry, as rendered (an href's '&' and "'" are escaped)."""
    return rendered_size(render_links(pairs))


def needed_bytes(cluster: Cluster, url: str) -> int:
    return cluster.all[url].base + alternates_bytes(listings(cluster).get(url, ()))


def survivor(clusters: Iterable[Cluster]) -> Cluster:
    """The cluster a merge keeps (the others redirect to it): the most members, then the smaller
    id. Members are disjoint and a loser joins a cluster at least as large, so each redirect at
    least doubles the cluster reached: a pointer (never rewritten) is at most
    log2(MAX_CLUSTER_MEMBERS) = 6 redirects away, whatever the order of publishes (keeping the
    smaller id alone would let an unlucky order add a redirect at every merge)."""
    return min(clusters, key=lambda cluster: (-len(cluster.all), cluster.cid))


def too_many_redirects(cid: str) -> RetryableError:
    """What a read of cluster ``cid`` raises when its record is more than ``MAX_REDIRECTS``
    redirects away: left out, its pages would render without alternates and a page joining
    it would start a cluster of its own, silently."""
    return RetryableError(
        f"hreflang cluster id {cid} is more than {MAX_REDIRECTS} redirects from a cluster "
        f"record (merges keep ids within {MAX_CLUSTER_MEMBERS.bit_length() - 1}): the registry "
        "is inconsistent"
    )


def merge(clusters: Iterable[Cluster], cid: str) -> Cluster:
    """One cluster holding every member of ``clusters`` (a URL in two: the first's member);
    its version and settled mark are the caller's to set."""
    members: dict[str, Member] = {}
    for cluster in clusters:
        for url, member in cluster.all.items():
            members.setdefault(url, member)
    return Cluster(cid=cid, members=members)


def with_member(cluster: Cluster, url: str, member: Member) -> Cluster:
    return replace(cluster, members={**cluster.all, url: member})


def too_large(cluster: Cluster) -> bool:
    return len(cluster.all) > MAX_CLUSTER_MEMBERS
