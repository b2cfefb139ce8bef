"""The WordPress must-use plugin (wordpress/sitemap-updater.php), run by PHP against just
enough of WordPress: what it sends for each post status transition is the sample in
events/cms/wordpress/, signed so that the native connector accepts it. Skipped without
``php`` on the PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sitemap_updater import connectors
from sitemap_updater.domain.events import parse_body
from sitemap_updater.domain.urls import Site
from tests.unit.test_connectors_signing import CONNECTORS, REPO, SECRET, sample

PLUGIN = REPO / "wordpress" / "sitemap-updater.php"
PHP = shutil.which("php")
assert PHP is not None, "php runs the plugin: scripts/system-deps installs it"

HARNESS = r"""<?php
define( 'ABSPATH', '/' );
define( 'SITEMAP_UPDATER_URL', 'http://127.0.0.1:8080/hooks/wordpress' );
define( 'SITEMAP_UPDATER_SECRET', getenv( 'SITEMAP_UPDATER_SECRET' ) );
$sent = array(); $scheduled = array(); $reply = 200; $hooks = array();
function add_action( $hook, $callback, $priority = 10, $args = 1 ) {
	global $hooks;
	$hooks[ $hook ] = $callback;
}
class WP_Post {
	public function __construct( array $fields ) {
		foreach ( $fields as $k => $v ) { $this->$k = $v; }
	}
}
function is_post_type_viewable( $type ) { return in_array( $type, array( 'post', 'page' ), true ); }
function wp_is_post_revision( $post ) { return false; }
function get_permalink( $post ) { return $post->permalink; }
function wp_json_encode( $data, $options = 0 ) { return json_encode( $data, $options ); }
function wp_remote_post( $url, $args ) {
	global $sent, $reply;
	$sent[] = array( 'url' => $url, 'headers' => $args['headers'], 'body' => $args['body'] );
	return array( 'response' => array( 'code' => $reply ) );
}
function is_wp_error( $thing ) { return false; }
function wp_remote_retrieve_response_code( $response ) { return $response['response']['code']; }
function wp_schedule_single_event( $at, $hook, $args ) {
	global $scheduled;
	$scheduled[] = array( $hook, $args );
}
require getenv( 'SITEMAP_UPDATER_PLUGIN' );
foreach ( json_decode( stream_get_contents( STDIN ), true ) as $step ) {
	$reply = isset( $step['reply'] ) ? $step['reply'] : 200;
	$post  = new WP_Post( $step['post'] );
	if ( 'before_delete_post' === $step['hook'] ) {
		call_user_func( $hooks['before_delete_post'], $post->ID, $post );
	} else {
		// As WordPress saves a post: transition_post_status first, before the REST API (the
		// block editor) saves its terms; wp_after_insert_post last, with the post as it was.
		$post->post_status = $step['new'];
		if ( isset( $hooks['transition_post_status'] ) ) {
			$early = clone $post;
			if ( isset( $step['before_terms'] ) ) {
				$early->permalink = $step['before_terms'];
			}
			call_user_func( $hooks['transition_post_status'], $step['new'], $step['old'], $early );
		}
		$before = null;
		if ( 'new' !== $step['old'] ) {
			$before = new WP_Post( array( 'post_status' => $step['old'] ) + $step['post'] );
		}
		if ( empty( $step['terms_fail'] ) ) { // else the REST API returns its error first
			$saved = $hooks['wp_after_insert_post'];
			call_user_func( $saved, $post->ID, $post, null !== $before, $before );
		}
	}
}
echo json_encode( array(
	'sent' => $sent,
	'scheduled' => $scheduled,
	'hooks' => array_keys( $hooks ),
) );
"""


def post(**fields: Any) -> dict[str, Any]:
    spring = {
        "ID": 1234,
        "post_type": "post",
        "post_status": "publish",
        "post_password": "",
        "post_title": "Spring menu is here",
        "post_date_gmt": "2026-03-20 09:30:00",
        "post_modified_gmt": "2026-03-20 09:30:00",
        "permalink": "https://www.example.com/2026/03/spring-menu/",
    }
    return {**spring, **fields}


GREEN = "Spring menu is here \u2014 and it\u2019s green"
STEPS = {
    "publish": ("publish", "draft", post()),
    "update": (
        "publish",
        "publish",
        post(post_title=GREEN, post_modified_gmt="2026-03-21 10:00:00"),
    ),
    "permalink-change": (
        "publish",
        "publish",
        post(
            post_title=GREEN,
            post_modified_gmt="2026-03-22 11:00:00",
            permalink="https://www.example.com/2026/03/spring-menu-2026/",
        ),
    ),
    "unpublish": (
        "draft",
        "publish",
        post(
            post_status="draft",
            post_title=GREEN,
            post_modified_gmt="2026-03-23 12:00:00",
            permalink="https://www.example.com/?p=1234",
        ),
    ),
    "trash": (
        "trash",
        "publish",
        post(
            ID=42,
            post_type="page",
            post_status="trash",
            post_title="About us",
            post_modified_gmt="2026-03-24 13:00:00",
            permalink="https://www.example.com/?page_id=42",
        ),
    ),
}


def run(steps: list[dict[str, Any]], tmp_path: Path) -> dict[str, Any]:
    harness = tmp_path / "harness.php"
    harness.write_text(HARNESS, encoding="utf-8")
    env = {
        **os.environ,
        "SITEMAP_UPDATER_SECRET": SECRET,
        "SITEMAP_UPDATER_PLUGIN": str(PLUGIN),
    }
    done = subprocess.run(
        [str(PHP), str(harness)],
        input=json.dumps(steps),
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def transition(name: str) -> dict[str, Any]:
    new, old, fields = STEPS[name]
    return {"hook": "wp_after_insert_post", "new": new, "old": old, "post": fields}


def test_the_plugin_is_valid_php() -> None:
    done = subprocess.run(
        [str(PHP), "-l", str(PLUGIN)], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", sorted(STEPS))
def test_each_transition_sends_its_sample_signed_for_the_native_connector(
    name: str, tmp_path: Path
) -> None:
    (sent,) = run([transition(name)], tmp_path)["sent"]
    body = sent["body"].encode("utf-8")
    t = int(sent["headers"]["X-Sitemap-Signature"].split(",")[0].removeprefix("t="))
    received = connectors.request("POST", "/hooks/wordpress", sent["headers"], body, t + 1.0)

    assert sent["url"] == "http://127.0.0.1:8080/hooks/wordpress"
    assert body == sample("wordpress", name).body
    assert connectors.verify(CONNECTORS["wordpress"], received, [SECRET]).accepted


def test_a_published_post_deleted_without_the_trash_is_unpublished(tmp_path: Path) -> None:
    deleted = post(ID=43, post_type="page", post_title="Opening hours")
    deleted.update(post_date_gmt="2026-02-11 15:20:30", post_modified_gmt="2026-02-11 15:20:30")
    steps = [
        {"hook": "before_delete_post", "post": deleted},
        {"hook": "before_delete_post", "post": post(ID=44, post_status="trash")},
    ]

    (sent,) = run(steps, tmp_path)["sent"]

    assert sent["body"].encode() == sample("wordpress", "delete").body


def test_drafts_revisions_menus_and_no_change_of_status_send_nothing(tmp_path: Path) -> None:
    steps = [
        {"hook": "wp_after_insert_post", "new": "draft", "old": "new", "post": post()},
        {"hook": "wp_after_insert_post", "new": "draft", "old": "draft", "post": post()},
        {"hook": "wp_after_insert_post", "new": "trash", "old": "draft", "post": post()},
        {
            "hook": "wp_after_insert_post",
            "new": "publish",
            "old": "publish",
            "post": post(post_type="nav_menu_item"),
        },
    ]

    assert run(steps, tmp_path)["sent"] == []


def test_a_password_on_a_published_post_unpublishes_it(tmp_path: Path) -> None:
    protected = post(post_password="secret", post_modified_gmt="2026-03-21 10:00:00")
    step = {"hook": "wp_after_insert_post", "new": "publish", "old": "publish", "post": protected}

    (sent,) = run([step], tmp_path)["sent"]

    assert json.loads(sent["body"]) == {
        "type": "unpublish",
        "version": 17740872000001,
        "id": "1234",
    }


def test_a_live_post_scheduled_again_goes_live_when_wordpress_publishes_it(
    tmp_path: Path,
) -> None:
    """WordPress's cron publishes a scheduled post without touching post_modified: the
    publish is versioned by post_date, after the unpublish it made when it was scheduled."""
    scheduled = post(post_status="future", post_date_gmt="2026-04-01 08:00:00")
    scheduled.update(post_modified_gmt="2026-03-21 10:00:00")
    steps = [
        {"hook": "wp_after_insert_post", "new": "future", "old": "publish", "post": scheduled},
        {
            "hook": "wp_after_insert_post",
            "new": "publish",
            "old": "future",
            "post": {**scheduled, "post_status": "publish"},
        },
    ]

    live_post = {**scheduled, "post_status": "publish"}
    steps.append({"hook": "before_delete_post", "post": live_post})  # then deleted for good

    gone, live, deleted = (json.loads(sent["body"]) for sent in run(steps, tmp_path)["sent"])

    assert (gone["type"], gone["version"]) == ("unpublish", 17740872000001)
    assert (live["type"], live["version"]) == ("publish", 17750304000000)
    assert live["lastmod"] == "2026-04-01T08:00:00Z"
    assert (deleted["type"], deleted["version"]) == ("unpublish", 17750304000001)


@pytest.mark.parametrize(
    ("reply", "retried"), [(500, True), (429, True), (401, False), (202, False)]
)
def test_a_failure_that_may_pass_is_tried_again_later(
    reply: int, retried: bool, tmp_path: Path
) -> None:
    result = run([{**transition("publish"), "reply": reply}], tmp_path)

    event = json.loads(result["sent"][0]["body"])
    assert result["scheduled"] == ([["sitemap_updater_retry", [event, 1]]] if retried else [])
    assert set(result["hooks"]) == {
        "transition_post_status",
        "wp_after_insert_post",
        "before_delete_post",
        "sitemap_updater_retry",
    }


def test_a_title_the_contract_would_refuse_is_fitted_so_the_page_still_goes(
    tmp_path: Path,
) -> None:
    untidy = "  Spring\x07 menu\u202e is\there " + "\u00e9" * 300
    (sent,) = run([transition("publish") | {"post": post(post_title=untidy)}], tmp_path)["sent"]
    title = json.loads(sent["body"])["title"]

    assert title == ("Spring menu is here " + "\u00e9" * 300)[:255] + "\u2026"
    assert len(title) == 256
    change = parse_body(sent["body"].encode(), Site.parse("https://www.example.com"), 100_000)
    assert change.title == title


def test_a_permalink_that_holds_the_category_is_the_one_the_save_gives(tmp_path: Path) -> None:
    # /%category%/%postname%/: the block editor saves the post, then its category.
    step = transition("publish") | {
        "post": post(permalink="https://www.example.com/news/spring-menu/"),
        "before_terms": "https://www.example.com/uncategorized/spring-menu/",
    }
    (sent,) = run([step], tmp_path)["sent"]
    assert json.loads(sent["body"])["url"] == "https://www.example.com/news/spring-menu/"


def test_an_unpublish_is_sent_when_the_status_is_stored(tmp_path: Path) -> None:
    # A REST save stores the post, then fails on its terms: no wp_after_insert_post.
    (sent,) = run([transition("unpublish") | {"terms_fail": True}], tmp_path)["sent"]
    assert json.loads(sent["body"])["type"] == "unpublish"
    assert run([transition("update") | {"terms_fail": True}], tmp_path)["sent"] == []
