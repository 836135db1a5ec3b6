/**
 * docs/benchmarks.svg: small multiples, one column per scenario, one row per metric
 * (acquisitions/s, max wait), a bar per library. Each panel has its own linear scale (the
 * scenarios differ by orders of magnitude) and every bar carries its value, so the chart reads
 * without an axis. Plain SVG written by hand: no dependency, and the output is stable text that
 * diffs well in git.
 */
import type { ResultRow } from './results.js';
import { isProbeName } from './scenarios.js';

const PANEL_W = 190;
const PANEL_H = 170;
const GAP_X = 18;
const GAP_Y = 44;
const MARGIN = { top: 78, left: 96, right: 16, bottom: 24 };
const PLOT_TOP = 26; // title space inside a panel
const PLOT_BOTTOM = 14; // room under the bars

const COLORS: Record<string, string> = {
  'rxjs-lock': '#c2255c',
  redlock: '#1971c2',
  'redis-semaphore': '#2f9e44',
  baseline: '#868e96',
};
const VARIANT_COLOR = '#f783ac';

interface Metric {
  /** Lines of the row's label, left of its panels. */
  readonly title: readonly string[];
  readonly value: (row: ResultRow) => number | null;
  readonly unit: string;
}

const METRICS: readonly Metric[] = [
  { title: ['acquisitions', 'per second'], value: (r) => r.acquisitionsPerSec, unit: '' },
  { title: ['longest wait', '(ms)'], value: (r) => r.waitMaxMs, unit: ' ms' },
];

const escapeXml = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function colorOf(row: { library: string; variant: string }): string {
  if (row.library === 'rxjs-lock' && row.variant !== 'default') return VARIANT_COLOR;
  return COLORS[row.library] ?? '#495057';
}

/** 12345 → 12.3k, 850 → 850, 3.21 → 3.2, 0.034 → 0.034 */
export function compact(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 10_000) return `${(value / 1000).toFixed(abs >= 100_000 ? 0 : 1)}k`;
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toPrecision(2);
}

function panel(x: number, y: number, title: string, rows: readonly ResultRow[], metric: Metric): string[] {
  const out: string[] = [];
  out.push(`<g transform="translate(${x},${y})">`);
  out.push(`<rect width="${PANEL_W}" height="${PANEL_H}" fill="#f8f9fa" stroke="#dee2e6"/>`);
  out.push(`<text x="${PANEL_W / 2}" y="17" text-anchor="middle" class="panel">${escapeXml(title)}</text>`);
  const values = rows.map((r) => ({ row: r, value: r.status === 'ok' ? metric.value(r) : null }));
  const max = Math.max(0, ...values.map((v) => v.value ?? 0));
  const plotH = PANEL_H - PLOT_TOP - PLOT_BOTTOM - 14; // 14: value labels above the tallest bar
  const baseY = PANEL_H - PLOT_BOTTOM;
  const slot = (PANEL_W - 16) / Math.max(1, values.length);
  const barW = Math.min(30, slot * 0.7);
  values.forEach(({ row, value }, i) => {
    const cx = 8 + slot * i + slot / 2;
    if (value === null) {
      out.push(`<text x="${cx.toFixed(1)}" y="${baseY - 4}" text-anchor="middle" class="na">${row.status === 'ok' ? 'n/a' : escapeXml(row.status)}</text>`);
      return;
    }
    const h = max > 0 ? Math.max(1, (value / max) * plotH) : 1;
    out.push(
      `<rect x="${(cx - barW / 2).toFixed(1)}" y="${(baseY - h).toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}" fill="${colorOf(row)}"><title>${escapeXml(`${row.label}: ${value}${metric.unit}`)}</title></rect>`,
    );
    out.push(`<text x="${cx.toFixed(1)}" y="${(baseY - h - 3).toFixed(1)}" text-anchor="middle" class="value">${escapeXml(compact(value))}</text>`);
  });
  out.push(`<line x1="4" x2="${PANEL_W - 4}" y1="${baseY}" y2="${baseY}" stroke="#adb5bd"/>`);
  out.push('</g>');
  return out;
}

export function renderChart(allRows: readonly ResultRow[]): string {
  // The probes (engine-cpu, floor) measure no acquisitions per second or waits: tables only.
  const rows = allRows.filter((r) => !isProbeName(r.scenario));
  const scenarios = [...new Set(rows.map((r) => r.scenario))];
  const order = (r: ResultRow) =>
    r.library === 'rxjs-lock'
      ? r.variant === 'default'
        ? 0
        : 1
      : 2 + ['redlock', 'redis-semaphore', 'baseline', 'store-only', 'script-floor', 'fenced-floor', 'quorum-floor'].indexOf(r.library);
  const labels = [...new Map(rows.map((r) => [r.label, r] as const)).values()].sort((a, b) => order(a) - order(b));
  const width = Math.max(900, MARGIN.left + scenarios.length * PANEL_W + (scenarios.length - 1) * GAP_X + MARGIN.right);
  const height = MARGIN.top + METRICS.length * PANEL_H + (METRICS.length - 1) * GAP_Y + MARGIN.bottom;
  const env = rows[0]?.env;
  const pinned = rows.some((r) => r.env.pinned !== null) ? ', Redis and clients pinned to separate CPUs (the same CPU for uncontended)' : '';
  const subtitle = env
    ? `one run, Redis ${env.redisVersion}, ${env.cores} cores${pinned}, node ${env.node}, ${env.runAt.slice(0, 10)}${env.quick ? ', QUICK smoke run' : ''}${rows.some((r) => (r.otherCpuPct ?? 0) >= 10) ? ' · other processes were busy during some runs (see benchmarks.md)' : ''} · each panel has its own scale`
    : '';

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif">`,
  );
  out.push(
    '<style>.panel{font-size:12px;font-weight:bold;fill:#212529}.value{font-size:10px;fill:#212529}.na{font-size:9px;fill:#868e96}.metric{font-size:12px;font-weight:bold;fill:#495057}.legend{font-size:11px;fill:#212529}.title{font-size:15px;font-weight:bold;fill:#212529}.subtitle{font-size:11px;fill:#495057}</style>',
  );
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(`<text x="${MARGIN.left}" y="22" class="title">rxjs-lock and its peers: acquisitions per second and longest wait, per scenario</text>`);
  out.push(`<text x="${MARGIN.left}" y="39" class="subtitle">${escapeXml(subtitle)}</text>`);

  // Legend: one swatch per library (and variant), in the order of the bars.
  let lx = MARGIN.left;
  for (const row of labels) {
    out.push(`<rect x="${lx}" y="50" width="12" height="12" fill="${colorOf(row)}"/>`);
    out.push(`<text x="${lx + 16}" y="60" class="legend">${escapeXml(row.label)}</text>`);
    lx += 16 + row.label.length * 6.2 + 18;
  }

  METRICS.forEach((metric, m) => {
    const y = MARGIN.top + m * (PANEL_H + GAP_Y);
    metric.title.forEach((line, i) => {
      out.push(`<text x="${MARGIN.left - 10}" y="${y + PANEL_H / 2 + i * 15}" text-anchor="end" class="metric">${escapeXml(line)}</text>`);
    });
    scenarios.forEach((scenario, s) => {
      const x = MARGIN.left + s * (PANEL_W + GAP_X);
      out.push(
        ...panel(
          x,
          y,
          scenario,
          rows.filter((r) => r.scenario === scenario),
          metric,
        ),
      );
    });
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
