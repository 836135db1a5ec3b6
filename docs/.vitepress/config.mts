// The documentation site: `npm run docs` builds the API reference (TypeDoc, into docs/api), then
// this site into docs/.vitepress/dist. VitePress fails the build on a dead link (no
// ignoreDeadLinks here, on purpose).
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { DefaultTheme } from 'vitepress';
import { withMermaid } from 'vitepress-plugin-mermaid';

interface SidebarItem {
  text: string;
  link?: string;
  collapsed?: boolean;
  items?: SidebarItem[];
}

/** TypeDoc's sidebar, with each entry point at the top level under its import path. */
function apiSidebar(): DefaultTheme.SidebarItem[] {
  const file = fileURLToPath(new URL('../api/typedoc-sidebar.json', import.meta.url));
  if (!existsSync(file)) throw new Error('docs/api is missing: run `npm run docs` (TypeDoc first), not vitepress alone');
  const [root] = JSON.parse(readFileSync(file, 'utf8')) as SidebarItem[];
  const isModule = (item: SidebarItem) => item.link?.endsWith('/') ?? false;
  const core = { ...root!, text: 'rxjs-lock', collapsed: false, items: root!.items!.filter((i) => !isModule(i)) };
  const subpaths = root!.items!.filter(isModule).map((m) => ({ ...m, text: `rxjs-lock/${m.text}` }));
  return [{ text: 'Overview', link: '/api/' }, core, ...subpaths];
}

export default withMermaid({
  title: 'rxjs-lock',
  description: 'Distributed locks for RxJS: taking a lock is subscribing; giving it back happens whatever ends the stream.',
  cleanUrls: true,
  lastUpdated: false,
  // The design notes are for contributors; they stay in the repository, not on the site.
  srcExclude: ['design.md', 'examples/**'],
  markdown: { lineNumbers: false },
  themeConfig: {
    nav: [
      { text: 'Getting started', link: '/getting-started' },
      { text: 'Concepts', link: '/concepts/pull-mode-lock' },
      {
        text: 'Lock kinds',
        items: [
          { text: 'Locks', link: '/concepts/pull-mode-lock' },
          { text: 'Semaphores', link: '/concepts/semaphores' },
          { text: 'Read-write locks', link: '/concepts/read-write-locks' },
          { text: 'Multi-key locks', link: '/concepts/multi-key-locks' },
        ],
      },
      { text: 'Guides', link: '/guides/nestjs' },
      { text: 'API', link: '/api/' },
      { text: 'Benchmarks', link: '/benchmarks' },
    ],
    sidebar: {
      '/api/': apiSidebar(),
      '/': [
        { text: 'Start', items: [{ text: 'Getting started in five minutes', link: '/getting-started' }] },
        {
          text: 'Concepts',
          items: [
            { text: 'The pull-mode lock and its inputs', link: '/concepts/pull-mode-lock' },
            { text: 'Choosing a TTL and a wait limit', link: '/concepts/ttl-and-wait-limit' },
            { text: 'Renewal and lease loss', link: '/concepts/renewal-and-lease-loss' },
            { text: 'Efficiency, correctness and fencing', link: '/concepts/fencing' },
            { text: 'The local gate and hand-off', link: '/concepts/local-gate-and-hand-off' },
            { text: 'Redlock: promises and limits', link: '/concepts/redlock' },
            { text: 'Cluster and failover', link: '/concepts/cluster-and-failover' },
            { text: 'Lock-delay', link: '/concepts/lock-delay' },
          ],
        },
        {
          text: 'Other kinds of lock',
          items: [
            { text: 'Semaphores: up to N holders', link: '/concepts/semaphores' },
            { text: 'Read-write locks', link: '/concepts/read-write-locks' },
            { text: 'Multi-key locks', link: '/concepts/multi-key-locks' },
          ],
        },
        {
          text: 'Guides',
          items: [
            { text: 'NestJS', link: '/guides/nestjs' },
            { text: 'Event pipelines', link: '/guides/event-pipelines' },
            { text: 'Scheduled jobs on one instance', link: '/guides/scheduled-jobs' },
            { text: 'Testing your code', link: '/guides/testing' },
            { text: 'Migrating from redlock and redis-semaphore', link: '/guides/migrating' },
            { text: 'Operations and long waits', link: '/guides/operations' },
          ],
        },
        {
          text: 'Reference',
          items: [
            { text: 'API reference', link: '/api/' },
            { text: 'The quorum store in depth', link: '/redlock' },
            { text: 'Benchmarks', link: '/benchmarks' },
          ],
        },
      ],
    },
    search: { provider: 'local' },
    outline: { level: [2, 3] },
  },
  mermaid: {},
  // The two chunks above Vite's 500 kB warning are loaded on demand, not with a page: the local
  // search index (it holds the API reference; fetched when the search box opens, ~780 kB) and
  // Mermaid's diagram kinds (each fetched by a page that draws one, the largest ~690 kB). A chunk
  // past 1 MB would still warn.
  vite: { build: { chunkSizeWarningLimit: 1_000 } },
});
