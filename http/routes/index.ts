// The route table of the whole service. Each resource's file exports its entries.
import type { RouteDef } from '../route.ts';
import type { AppDeps } from '../deps.ts';
import { keyRoutes } from './keys.ts';
import { accountRoutes } from './account.ts';
import { systemRoutes } from './system.ts';
import { integrationRoutes } from './integrations.ts';
import { phoneNumberRoutes } from './phone-numbers.ts';
import { agentRoutes } from './agents.ts';
import { voiceRoutes } from './voices.ts';
import { callerRoutes } from './callers.ts';
import { callRoutes } from './calls.ts';
import { carrierTwilioRoutes } from './carrier-twilio.ts';
import { carrierTwilioTransferRoutes } from './carrier-twilio-transfer.ts';
import { carrierTwilioRecordingRoutes } from './carrier-twilio-recording.ts';
import { carrierTelnyxRoutes } from './carrier-telnyx.ts';
import { debugRoutes } from './debug.ts';
import { pageRoutes } from './pages.ts';
import { recordingRoutes } from './recordings.ts';
import { batchCampaignRoutes } from './batch-campaigns.ts';
import { smsRoutes } from './sms.ts';
import { smsCampaignRoutes } from './sms-campaigns.ts';
import { carrierTwilioSmsRoutes } from './carrier-twilio-sms.ts';
import { webCallRoutes } from './web-calls.ts';

export function allRoutes(deps: AppDeps): RouteDef<any, any>[] {
  const routes: RouteDef<any, any>[] = [];
  routes.push(...keyRoutes(deps), ...accountRoutes(deps), ...phoneNumberRoutes(deps), ...callerRoutes(deps), ...agentRoutes(deps), ...voiceRoutes(), ...integrationRoutes(deps), ...callRoutes(deps), ...webCallRoutes(deps), ...batchCampaignRoutes(deps), ...smsCampaignRoutes(deps), ...smsRoutes(deps), ...carrierTwilioRoutes(deps), ...carrierTwilioSmsRoutes(deps), ...carrierTwilioTransferRoutes(deps), ...carrierTwilioRecordingRoutes(deps), ...carrierTelnyxRoutes(deps), ...debugRoutes(deps), ...pageRoutes(), ...recordingRoutes(deps), ...systemRoutes(deps, () => routes));
  return routes;
}
