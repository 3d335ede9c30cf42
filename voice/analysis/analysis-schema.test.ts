// The analysis's two schemas from one source: what the model is asked for (strict JSON
// schema, every key required) and what its answer is held to before it is stored.
import { describe, expect, it } from 'vitest';
import type { ExtractionField } from '../../storage/agents.ts';
import { analysisResponseFormat, parseAnalysisAnswer } from './analysis-schema.ts';

const FIELDS: ExtractionField[] = [
  { name: 'party_size', type: 'integer', description: 'How many people' },
  { name: 'budget', type: 'number', description: 'Budget in euros' },
  { name: 'wants_callback', type: 'boolean', description: 'Asked to be called back' },
  { name: 'tier', type: 'string', description: 'Tier', enum: ['gold', 'silver'] },
  { name: 'note', type: 'string', description: 'Anything else' },
];

const good = { summary: 'Booked a table for two.', sentiment: 'happy', successful: true, open_item: null };
const json = (v: unknown) => JSON.stringify(v);

describe('the answer a model gives', () => {
  it('is accepted when it fits; unknown keys are dropped; a blank open item means none', () => {
    expect(parseAnalysisAnswer(json({ ...good, open_item: '  ', chatter: 'x' }), [])).toEqual({
      ok: true,
      analysis: { summary: 'Booked a table for two.', sentiment: 'happy', successful: true, open_item: null, extracted: null },
    });
    expect(parseAnalysisAnswer(json({ ...good, open_item: 'Send the menu.' }), [])).toMatchObject({ ok: true, analysis: { open_item: 'Send the menu.' } });
  });

  it('is accepted inside a Markdown json fence, and refused when it is prose or cut JSON', () => {
    expect(parseAnalysisAnswer('```json\n' + json(good) + '\n```', [])).toMatchObject({ ok: true });
    expect(parseAnalysisAnswer('The caller was happy and booked a table.', [])).toEqual({ ok: false, reason: 'the answer is not JSON' });
    expect(parseAnalysisAnswer(json(good).slice(0, 20), [])).toEqual({ ok: false, reason: 'the answer is not JSON' });
  });

  it.each([
    ['sentiment outside the three', { ...good, sentiment: 'angry' }, 'sentiment'],
    ['successful as a string', { ...good, successful: 'yes' }, 'successful'],
    ['summary missing', { sentiment: 'happy', successful: true, open_item: null }, 'summary'],
    ['summary empty', { ...good, summary: ' ' }, 'summary'],
    ['summary too long', { ...good, summary: 'x'.repeat(2001) }, 'summary'],
    ['open_item missing', { summary: 'a', sentiment: 'happy', successful: false }, 'open_item'],
    ['an array', [good], '(root)'],
  ])('is refused with %s', (_what, answer, path) => {
    const r = parseAnalysisAnswer(json(answer), []);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.reason).toContain(`the answer does not fit the schema: ${path}`);
  });

  it('must carry every extraction field with its type (null when the call did not tell)', () => {
    const extracted = { party_size: 2, budget: 80.5, wants_callback: false, tier: 'gold', note: null };
    expect(parseAnalysisAnswer(json({ ...good, extracted }), FIELDS)).toEqual({ ok: true, analysis: { ...good, extracted } });
    for (const [bad, path] of [
      [{ ...extracted, party_size: 2.5 }, 'extracted.party_size'],
      [{ ...extracted, party_size: '2' }, 'extracted.party_size'],
      [{ ...extracted, wants_callback: 'no' }, 'extracted.wants_callback'],
      [{ ...extracted, tier: 'bronze' }, 'extracted.tier'],
      [{ party_size: 2, budget: 1, wants_callback: true, tier: null }, 'extracted.note'],
    ] as const) {
      const r = parseAnalysisAnswer(json({ ...good, extracted: bad }), FIELDS);
      expect(!r.ok && r.reason, path).toContain(path);
    }
    expect(parseAnalysisAnswer(json(good), FIELDS)).toMatchObject({ ok: false, reason: expect.stringContaining('extracted') });
  });
});

describe('the response_format asked for', () => {
  it('is a strict JSON schema with every key required, extracted only when the agent has fields', () => {
    const bare = analysisResponseFormat([]) as any;
    expect(bare.type).toBe('json_schema');
    expect(bare.json_schema).toMatchObject({ name: 'call_analysis', strict: true });
    expect(bare.json_schema.schema.required).toEqual(['summary', 'sentiment', 'successful', 'open_item']);
    expect(bare.json_schema.schema.additionalProperties).toBe(false);
    expect(bare.json_schema.schema.properties.sentiment.enum).toEqual(['happy', 'neutral', 'frustrated']);

    const withFields = (analysisResponseFormat(FIELDS) as any).json_schema.schema;
    expect(withFields.required).toContain('extracted');
    expect(withFields.properties.extracted).toMatchObject({ type: 'object', required: FIELDS.map((f) => f.name), additionalProperties: false });
    expect(withFields.properties.extracted.properties.party_size).toEqual({ type: ['integer', 'null'], description: 'How many people' });
    expect(withFields.properties.extracted.properties.tier).toEqual({ type: ['string', 'null'], enum: ['gold', 'silver', null], description: 'Tier' });
  });
});
