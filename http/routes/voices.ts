// The voice catalogue: what an agent's or a number's voice_id may be. The provider's
// own voice name stays internal.
import { z } from 'zod';
import { defineRoute, ok } from '../route.ts';
import { VOICES } from '../../voice/voices.ts';

const voiceView = z.object({
  voice_id: z.string().meta({ description: 'What agents and numbers store; matched exactly, case included.', example: 'Ashley' }),
  name: z.string(),
  gender: z.enum(['female', 'male', 'neutral']),
  languages: z.array(z.string()).meta({ description: 'Language codes the voice speaks.' }),
  provider: z.string().meta({ description: 'The text-to-speech provider.' }),
});

const voices = VOICES.map((v) => ({ voice_id: v.voice_id, name: v.name, gender: v.gender, languages: [...v.languages], provider: v.provider }));

export function voiceRoutes() {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/voices',
      summary: 'List the supported voices',
      tag: 'Voices',
      responses: {
        200: {
          description: 'Every voice, unpaginated; `count` is the number of voices.',
          schema: z.object({ voices: z.array(voiceView), count: z.number().int() }),
        },
      },
      errors: [],
      handler: () => ok({ voices, count: voices.length }),
    }),
  ];
}
