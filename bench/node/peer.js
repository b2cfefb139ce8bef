// sitemap.js (npm "sitemap", pinned in package.json) on the same rows as `sitemap-updater build`.
//
//   node peer.js buffered|streaming ROWS.jsonl OUT_DIR
//
// ROWS.jsonl: one sitemap.js item per line ({url, lastmod?, changefreq?, priority?, img?, links?}).
// Both modes write gzipped sitemaps of at most LIMIT urls and a sitemap index, as the build does.
//
// * buffered: the README's in-memory path. Every row parsed up front, each shard rendered by
//   SitemapStream + streamToPromise into one Buffer, gzipped in one zlib.gzipSync call (level 6),
//   written with one writeFileSync; the index the same way (uncompressed).
// * streaming: the README's path for "more than 50,000 urls": simpleSitemapAndIndex reading the
//   line-separated file, each sitemap piped through createGzip() into a write stream (many small
//   gzip writes), the index gzipped too.
'use strict';

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { Readable } = require('stream');
const {
  SitemapStream,
  SitemapIndexStream,
  streamToPromise,
  simpleSitemapAndIndex,
} = require('sitemap');

const HOSTNAME = process.env.SITE_URL || 'https://www.example.com';
const LIMIT = Number(process.env.LIMIT || 10000);

async function buffered(rows, outDir) {
  const items = fs
    .readFileSync(rows, 'utf8')
    .split('\n')
    .filter((line) => line)
    .map((line) => JSON.parse(line));
  const shards = [];
  for (let start = 0, n = 1; start < items.length; start += LIMIT, n += 1) {
    const stream = new SitemapStream({ hostname: HOSTNAME });
    const xml = await streamToPromise(Readable.from(items.slice(start, start + LIMIT)).pipe(stream));
    const name = `sitemap-${n}.xml.gz`;
    fs.writeFileSync(path.join(outDir, name), zlib.gzipSync(xml, { level: 6 }));
    shards.push({ url: `${HOSTNAME}/${name}` });
  }
  const index = new SitemapIndexStream();
  const xml = await streamToPromise(Readable.from(shards).pipe(index));
  fs.writeFileSync(path.join(outDir, 'sitemap.xml'), xml);
}

async function streaming(rows, outDir) {
  await simpleSitemapAndIndex({
    hostname: HOSTNAME,
    destinationDir: outDir,
    sourceData: rows,
    limit: LIMIT,
    gzip: true,
  });
}

const [mode, rows, outDir] = process.argv.slice(2);
const run = { buffered, streaming }[mode];
if (!run || !rows || !outDir) {
  console.error('usage: node peer.js buffered|streaming ROWS.jsonl OUT_DIR');
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });
run(rows, outDir).catch((error) => {
  console.error(error);
  process.exit(1);
});
