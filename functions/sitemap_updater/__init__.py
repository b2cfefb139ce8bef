"""sitemap-updater: keep a large site's XML sitemaps correct and fresh, event by event."""
