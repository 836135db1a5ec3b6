/**
 * The site's Mermaid diagrams are drawn in the reader's browser, so the docs build cannot see a
 * diagram that does not parse (it shows as an error box on the page). Parse every one here.
 * Sequence diagrams parse without a DOM; other kinds need one, so the site uses sequence diagrams.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import mermaid from 'mermaid';
import { describe, expect, it } from 'vitest';

const docs = join(import.meta.dirname, '../../docs');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name.startsWith('.') || entry.name === 'api' ? [] : markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

const diagrams = markdownFiles(docs).flatMap((file) =>
  [...readFileSync(file, 'utf8').matchAll(/```mermaid\n([\s\S]*?)```/g)].map((match, index) => ({
    name: `${relative(docs, file)} #${index + 1}`,
    text: match[1]!,
  })),
);

describe('Mermaid diagrams of the site', () => {
  it('has the sequence diagrams the docs promise', () => {
    expect(diagrams.map((d) => d.name)).toEqual(
      expect.arrayContaining([
        'concepts/local-gate-and-hand-off.md #1',
        'concepts/renewal-and-lease-loss.md #1',
        'concepts/redlock.md #1',
        'concepts/lock-delay.md #1',
      ]),
    );
  });

  it.each(diagrams)('$name parses', async ({ text }) => {
    await expect(mermaid.parse(text)).resolves.toMatchObject({ diagramType: 'sequence' });
  });

  it('a broken diagram does not parse (the check can fail)', async () => {
    await expect(mermaid.parse('sequenceDiagram\n  A->>B: one; two')).rejects.toThrow();
  });
});
