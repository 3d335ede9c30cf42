import { isValidPhoneNumber } from 'libphonenumber-js/max';
import { describe, expect, it } from 'vitest';
import { batchBody, benchPhone, farDate, peakOverlap, percentile, steadyRate } from './batch-plan.ts';

describe('batch bench plan', () => {
  it('numbers are distinct real US numbers (libphonenumber-js, full metadata), blocks apart', () => {
    const create = Array.from({ length: 10_000 }, (_, i) => benchPhone(0, i));
    const dial = Array.from({ length: 2_000 }, (_, i) => benchPhone(1, i));
    const all = [...create, ...dial];
    expect(new Set(all).size).toBe(all.length);
    for (const p of all) expect(isValidPhoneNumber(p), p).toBe(true);
    expect(benchPhone(0, 0)).toBe('+16282000000');
    expect(benchPhone(1, 999_999)).toBe('+16283999999');
    expect(() => benchPhone(8, 0)).toThrow(RangeError);
    expect(() => benchPhone(0, 1_000_000)).toThrow(RangeError);
  });

  it('builds the batch body, scheduled or now', () => {
    const scheduled = JSON.parse(batchBody({ agentId: 'a', fromNumber: '+1', name: 'n', phones: ['+16282000000', '+16282000001'], variables: true, scheduledDate: '2031-01-01', maxConcurrent: 50 }));
    expect(scheduled).toMatchObject({ schedule_type: 'schedule', scheduled_date: '2031-01-01', max_concurrent: 50 });
    expect(scheduled.recipients).toEqual([
      { phone: '+16282000000', variables: { first_name: 'R0' } },
      { phone: '+16282000001', variables: { first_name: 'R1' } },
    ]);
    const now = JSON.parse(batchBody({ agentId: 'a', fromNumber: '+1', name: 'n', phones: ['+16282000000'], variables: false }));
    expect(now.schedule_type).toBe('now');
    expect(now).not.toHaveProperty('scheduled_date');
    expect(now).not.toHaveProperty('max_concurrent');
    expect(now.recipients).toEqual([{ phone: '+16282000000' }]);
    expect(farDate(Date.UTC(2026, 5, 1), 5)).toBe('2031-01-01');
  });

  it('percentile, peak overlap and steady rate', () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(percentile([1, 2, 3, 4], 100)).toBe(4);
    expect(percentile([], 50)).toBeNaN();
    expect(peakOverlap([{ start: 0, end: 10 }, { start: 5, end: 15 }, { start: 10, end: 20 }])).toBe(2);
    expect(peakOverlap([{ start: 0, end: null }, { start: 100, end: 200 }])).toBe(2);
    // 11 events 100 ms apart: 10 per second, the same over the middle part.
    expect(steadyRate(Array.from({ length: 11 }, (_, i) => i * 100))).toBeCloseTo(10);
    expect(steadyRate([0, 1])).toBeNaN();
  });
});
