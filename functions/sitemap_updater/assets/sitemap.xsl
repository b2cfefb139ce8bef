<?xml version="1.0" encoding="UTF-8"?>
<!--
  sitemap-updater's human view: the sitemap index and each sitemap as a readable table.

  Browsers apply it to documents that carry <?xml-stylesheet type="text/xsl"
  href="/sitemap.xsl"?> (the STYLESHEET setting); crawlers never do. XSLT 1.0 only, so
  every browser that still has XSLT can run it. It reads the sitemaps.org elements and,
  when present, counts Google's image, video and news extensions and xhtml:link alternates.
-->
<xsl:stylesheet version="1.0"
    xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
    xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
    xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"
    xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"
    xmlns:xhtml="http://www.w3.org/1999/xhtml"
    exclude-result-prefixes="sm image video news xhtml">

  <xsl:output method="html" encoding="UTF-8" indent="yes" doctype-system="about:legacy-compat"/>

  <xsl:template match="/">
    <html lang="en">
      <head>
        <meta charset="utf-8"/>
        <meta name="viewport" content="width=device-width, initial-scale=1"/>
        <title>
          <xsl:choose>
            <xsl:when test="sm:sitemapindex">Sitemap index</xsl:when>
            <xsl:otherwise>Sitemap</xsl:otherwise>
          </xsl:choose>
        </title>
        <style>
          body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
                 max-width: 78em; padding: 0 1em; color: #1f2328; }
          h1 { font-size: 1.5em; margin-bottom: .2em; }
          p.note { color: #59636e; margin-top: 0; }
          table { border-collapse: collapse; width: 100%; margin-top: 1em; }
          th, td { text-align: left; padding: .35em .6em; border-bottom: 1px solid #d1d9e0; }
          th { background: #f6f8fa; position: sticky; top: 0; }
          td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
          td.url { word-break: break-all; }
          tr:hover td { background: #f6f8fa; }
          a { color: #0969da; text-decoration: none; }
          a:hover { text-decoration: underline; }
        </style>
      </head>
      <body>
        <xsl:apply-templates select="sm:sitemapindex | sm:urlset"/>
        <p class="note">An XML sitemap for search engines, shown as a table for people.
          Crawlers read the XML itself.</p>
      </body>
    </html>
  </xsl:template>

  <!-- An index: each sitemap it names, with when its bytes last changed. -->
  <xsl:template match="sm:sitemapindex">
    <h1>Sitemap index</h1>
    <p class="summary">This index lists
      <strong id="sitemap-count"><xsl:value-of select="count(sm:sitemap)"/></strong>
      sitemap<xsl:if test="count(sm:sitemap) != 1">s</xsl:if>.</p>
    <table id="sitemaps">
      <thead>
        <tr><th class="n">#</th><th>Sitemap</th><th>Last modified</th></tr>
      </thead>
      <tbody>
        <xsl:for-each select="sm:sitemap">
          <tr>
            <td class="n"><xsl:value-of select="position()"/></td>
            <td class="url"><xsl:call-template name="link">
              <xsl:with-param name="url" select="normalize-space(sm:loc)"/>
            </xsl:call-template></td>
            <td><xsl:value-of select="sm:lastmod"/></td>
          </tr>
        </xsl:for-each>
      </tbody>
    </table>
  </xsl:template>

  <!-- A sitemap: every URL, its fields and, when the sitemap has any, its extensions. -->
  <xsl:template match="sm:urlset">
    <xsl:variable name="images" select="count(sm:url/image:image)"/>
    <xsl:variable name="videos" select="count(sm:url/video:video)"/>
    <xsl:variable name="alternates" select="count(sm:url/xhtml:link[@rel = 'alternate'])"/>
    <xsl:variable name="news" select="count(sm:url/news:news)"/>
    <h1>Sitemap</h1>
    <p class="summary">This sitemap lists
      <strong id="url-count"><xsl:value-of select="count(sm:url)"/></strong>
      URL<xsl:if test="count(sm:url) != 1">s</xsl:if>
      <xsl:if test="$images &gt; 0">, <span id="image-count"><xsl:value-of select="$images"/></span> images</xsl:if>
      <xsl:if test="$videos &gt; 0">, <span id="video-count"><xsl:value-of select="$videos"/></span> videos</xsl:if>
      <xsl:if test="$alternates &gt; 0">, <span id="alternate-count"><xsl:value-of select="$alternates"/></span> language alternates</xsl:if>
      <xsl:if test="$news &gt; 0">, <span id="news-count"><xsl:value-of select="$news"/></span> news articles</xsl:if>.
      <a href="/sitemap.xml">Sitemap index</a></p>
    <table id="urls">
      <thead>
        <tr>
          <th class="n">#</th><th>URL</th><th>Last modified</th><th>Change frequency</th>
          <th class="n">Priority</th>
          <xsl:if test="$images &gt; 0"><th class="n">Images</th></xsl:if>
          <xsl:if test="$videos &gt; 0"><th class="n">Videos</th></xsl:if>
          <xsl:if test="$alternates &gt; 0"><th class="n">Alternates</th></xsl:if>
          <xsl:if test="$news &gt; 0"><th class="n">News</th></xsl:if>
        </tr>
      </thead>
      <tbody>
        <xsl:for-each select="sm:url">
          <tr>
            <td class="n"><xsl:value-of select="position()"/></td>
            <td class="url"><xsl:call-template name="link">
              <xsl:with-param name="url" select="normalize-space(sm:loc)"/>
            </xsl:call-template></td>
            <td><xsl:value-of select="sm:lastmod"/></td>
            <td><xsl:value-of select="sm:changefreq"/></td>
            <td class="n"><xsl:value-of select="sm:priority"/></td>
            <xsl:if test="$images &gt; 0"><td class="n"><xsl:value-of select="count(image:image)"/></td></xsl:if>
            <xsl:if test="$videos &gt; 0"><td class="n"><xsl:value-of select="count(video:video)"/></td></xsl:if>
            <xsl:if test="$alternates &gt; 0"><td class="n"><xsl:value-of select="count(xhtml:link[@rel = 'alternate'])"/></td></xsl:if>
            <xsl:if test="$news &gt; 0"><td class="n"><xsl:value-of select="count(news:news)"/></td></xsl:if>
          </tr>
        </xsl:for-each>
      </tbody>
    </table>
  </xsl:template>

  <!-- Only http(s) URLs become links: a hand-edited file cannot smuggle in javascript:. -->
  <xsl:template name="link">
    <xsl:param name="url"/>
    <xsl:choose>
      <xsl:when test="starts-with($url, 'https://') or starts-with($url, 'http://')">
        <a href="{$url}"><xsl:value-of select="$url"/></a>
      </xsl:when>
      <xsl:otherwise><xsl:value-of select="$url"/></xsl:otherwise>
    </xsl:choose>
  </xsl:template>
</xsl:stylesheet>
