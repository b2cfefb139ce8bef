"""The CDK app of sitemap-updater: one construct per concern, composed by
:class:`~sitemap_infra.updater.SitemapUpdater` (reusable from another team's app) and deployed
on its own by :class:`~sitemap_infra.stack.SitemapUpdaterStack`."""
