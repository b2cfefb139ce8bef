<?php
/**
 * Plugin Name: Sitemap Updater
 * Description: Tells sitemap-updater when a post or page is published, updated, moved, unpublished, trashed or deleted: one event of its native contract per change, HMAC-signed.
 * Version: 1.0.0
 * Requires at least: 5.6
 * Requires PHP: 7.4
 * License: Apache-2.0
 *
 * A must-use plugin: copy this file into wp-content/mu-plugins/ and add to wp-config.php
 *
 *     define( 'SITEMAP_UPDATER_URL', 'https://<endpoint>/hooks/wordpress' );
 *     define( 'SITEMAP_UPDATER_SECRET', '<the connector\'s secret>' );
 *
 * Each event names the page by its post ID, so a changed permalink moves the page and an
 * unpublish needs no URL. Its version is post_modified_gmt in milliseconds times ten, plus one
 * for an unpublish; a published post's is post_date_gmt when later (a scheduled post goes live
 * then): the same versions the WP Webhooks connector gives (docs/CONNECTORS.md).
 */

defined( 'ABSPATH' ) || exit;

add_action( 'transition_post_status', 'sitemap_updater_transition', 10, 3 );
add_action( 'wp_after_insert_post', 'sitemap_updater_saved', 10, 4 );
add_action( 'before_delete_post', 'sitemap_updater_delete', 10, 2 );
add_action( 'sitemap_updater_retry', 'sitemap_updater_send', 10, 2 );

/**
 * Unpublish and trash (publish to anything else, or a password set): at once, as the status
 * is stored. The event names the post by ID, so it needs no permalink, and it is sent even
 * when a REST save then fails on the post's terms or meta.
 */
function sitemap_updater_transition( $new_status, $old_status, $post ) {
	if ( 'publish' === $old_status && ! sitemap_updater_listed( $post, $new_status ) && sitemap_updater_counts( $post ) ) {
		sitemap_updater_send( sitemap_updater_event( $post, true ) );
	}
}

/**
 * Publish, update and permalink change: on wp_after_insert_post, which fires once the post's
 * terms and meta are saved too (the block editor saves them after the post), so a permalink
 * holding %category% is the one this save gives; also when a scheduled post goes live.
 * Drafts never published send nothing.
 */
function sitemap_updater_saved( $post_id, $post, $update, $post_before ) {
	if ( sitemap_updater_listed( $post, $post->post_status ) && sitemap_updater_counts( $post ) ) {
		sitemap_updater_send( sitemap_updater_event( $post, false ) );
	}
}

function sitemap_updater_listed( $post, $status ) {
	return 'publish' === $status && '' === $post->post_password;
}

function sitemap_updater_counts( $post ) {
	return is_post_type_viewable( $post->post_type ) && ! wp_is_post_revision( $post );
}

/** A published post deleted without going through the trash. */
function sitemap_updater_delete( $post_id, $post ) {
	if ( $post && 'publish' === $post->post_status && is_post_type_viewable( $post->post_type ) ) {
		sitemap_updater_send( sitemap_updater_event( $post, true ) );
	}
}

function sitemap_updater_event( $post, $gone ) {
	$when = strtotime( $post->post_modified_gmt . ' UTC' );
	if ( 'publish' === $post->post_status ) { // a scheduled post goes live at post_date
		$when = max( $when, (int) strtotime( $post->post_date_gmt . ' UTC' ) );
	}
	$event    = array( 'type' => $gone ? 'unpublish' : 'publish' );
	if ( ! $gone ) {
		$event['url'] = get_permalink( $post );
	}
	$event['version'] = $when * 10000 + ( $gone ? 1 : 0 );
	if ( ! $gone ) {
		$event['lastmod'] = gmdate( 'Y-m-d\TH:i:s\Z', $when );
		$title            = sitemap_updater_title( $post->post_title );
		if ( '' !== $title ) {
			$event['title'] = $title;
		}
	}
	$event['id'] = (string) $post->ID;
	return $event;
}

/**
 * The title for the feed of recent changes, as the contract takes it: no control characters,
 * no bidirectional overrides, at most 256 characters. (No mbstring: PCRE counts characters.)
 */
function sitemap_updater_title( $title ) {
	$title = preg_replace( '/[\x00-\x1F\x7F\x{202A}-\x{202E}\x{2066}-\x{2069}\x{FFFE}\x{FFFF}\s]+/u', ' ', (string) $title );
	$title = trim( (string) $title );
	if ( preg_match_all( '/./us', $title ) > 256 ) {
		preg_match( '/^.{255}/us', $title, $kept );
		$title = rtrim( $kept[0] ) . "\u{2026}";
	}
	return $title;
}

/**
 * POST the event, signed: X-Sitemap-Signature: t=<now>,v1=<hex HMAC-SHA256 of "<t>.<body>">.
 * A failure that may pass is tried again a minute later, signed anew, up to five times.
 */
function sitemap_updater_send( $event, $attempt = 0 ) {
	if ( ! defined( 'SITEMAP_UPDATER_URL' ) || ! defined( 'SITEMAP_UPDATER_SECRET' ) ) {
		return;
	}
	$body     = wp_json_encode( $event, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE );
	$t        = time();
	$response = wp_remote_post(
		SITEMAP_UPDATER_URL,
		array(
			'timeout' => 5,
			'headers' => array(
				'Content-Type'        => 'application/json',
				'X-Sitemap-Signature' => 't=' . $t . ',v1=' . hash_hmac( 'sha256', $t . '.' . $body, SITEMAP_UPDATER_SECRET ),
			),
			'body'    => $body,
		)
	);
	$code = is_wp_error( $response ) ? 0 : (int) wp_remote_retrieve_response_code( $response );
	if ( ( 0 === $code || 429 === $code || $code >= 500 ) && $attempt < 5 ) {
		wp_schedule_single_event( time() + 60, 'sitemap_updater_retry', array( $event, $attempt + 1 ) );
	}
}
