"""hreflang clusters: pages that declare each other as language versions (pure).

Pages declare alternates partially and at different times; the registry keeps one cluster
record per group of pages linked by declarations, and every sitemap entry is rendered from
it, so each cluster is complete and reciprocal: every published member lists itself and
every other published member that has a language, and nothing else.

* A member's languages: its own ``hreflang`` if its event gives one (plus ``x-default`` if a
  sibling declares it so); otherwise every language its siblings declare for it.
* Members are connected by declarations in either direction. Clusters merge when a page
  links two of them; a page that stops declaring a link may leave its siblings' component:
  components are computed from the current declarations at every rendering.
* An unpublished member keeps its declarations (they still say what its siblings are) but
  is listed nowhere; a page not yet published is a member-to-be.
* A member's entry grows with its cluster: ``base`` is its size without alternates, and the
  registry keeps ``reserved`` (what its shard holds for it) at or above what it renders to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from sitemap_updater.domain.contract import X_DEFAULT
from sitemap_updater.domain.errors import RetryableError

MAX_CLUSTER_MEMBERS = 64
# Redirects a read follows from a cluster id to its cluster: merges keep any pointer within
# log2(MAX_CLUSTER_MEMBERS) = 6 (see ``survivor``); more means the registry is inconsistent.
MAX_REDIRECTS = 16
LINK_FRAME = len('<xhtml:link rel="alternate" hreflang="" href=""/>')


@dataclass(frozen=True)
class Member:
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

    @property
    def all(self) -> Mapping[str, Member]:
        return self.members or {}


def languages(cluster: Cluster, url: str) -> frozenset[str]:
    """What hreflang values ``url`` is listed under."""
    member = cluster.all.get(url)
    declared = {
        lang for other in cluster.all.values() for lang, href in other.declares if href == url
    }
    if member is not None and member.lang is not None:
        return frozenset({member.lang} | ({X_DEFAULT} & declared))
    return frozenset(declared)


def component(cluster: Cluster, url: str) -> frozenset[str]:
    """The members linked to ``url`` by declarations, in either direction (itself included)."""
    neighbours: dict[str, set[str]] = {member: set() for member in cluster.all}
    for source, member in cluster.all.items():
        for _, href in member.declares:
            if href in neighbours and href != source:
                neighbours[source].add(href)
                neighbours[href].add(source)
    if url not in neighbours:
        return frozenset({url})
    seen = {url}
    frontier = [url]
    while frontier:
        for nxt in neighbours[frontier.pop()] - seen:
            seen.add(nxt)
            frontier.append(nxt)
    return frozenset(seen)


def alternates(cluster: Cluster, url: str) -> tuple[tuple[str, str], ...]:
    """The (hreflang, href) pairs ``url``'s entry lists: every published member of its
    component that has a language, itself included; nothing if it is alone or has none."""
    member = cluster.all.get(url)
    if member is None or not member.live or not languages(cluster, url):
        return ()
    listed = [
        (lang, other)
        for other in component(cluster, url)
        if cluster.all[other].live
        for lang in languages(cluster, other)
    ]
    if len({href for _, href in listed}) < 2:
        return ()
    return tuple(sorted(listed))


def alternates_bytes(pairs: Iterable[tuple[str, str]]) -> int:
    """Bytes the pairs add to an entry (hrefs are ASCII; '&' is escaped)."""
    return sum(LINK_FRAME + len(lang) + len(href) + 4 * href.count("&") for lang, href in pairs)


def needed_bytes(cluster: Cluster, url: str) -> int:
    """What ``url``'s entry renders to with this cluster."""
    return cluster.all[url].base + alternates_bytes(alternates(cluster, url))


def survivor(clusters: Iterable[Cluster]) -> Cluster:
    """The cluster a merge keeps (the others become redirects to it): the one with the most
    members, the smaller id on a tie.

    A page's pointer is never rewritten by a merge, so it reaches its cluster through one
    redirect per merge its cluster lost. Members are disjoint (each page belongs to the one
    cluster its pointer reaches), so a cluster that loses a merge joins one at least as
    large: each redirect at least doubles the cluster reached, and a pointer is at most
    log2(MAX_CLUSTER_MEMBERS) = 6 redirects from its cluster, whatever the order of
    publishes. Keeping the smaller id let an unlucky order add a redirect at every merge.
    """
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
    """One cluster holding every member of ``clusters`` (the first's version counts up)."""
    members: dict[str, Member] = {}
    for cluster in clusters:
        for url, member in cluster.all.items():
            members.setdefault(url, member)
    return Cluster(cid=cid, version=0, members=members)


def with_member(cluster: Cluster, url: str, member: Member) -> Cluster:
    return replace(cluster, members={**cluster.all, url: member})


def too_large(cluster: Cluster) -> bool:
    return len(cluster.all) > MAX_CLUSTER_MEMBERS
