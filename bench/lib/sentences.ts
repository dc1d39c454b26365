// Fifty call-centre / voice-agent sentences for round-trip (synthesis -> recognition) scoring, written for this
// project: amounts, times, dates, ordinals, percentages, account numbers and common names, as an agent would say them.
// Numbers are written the way a transcript would show them, so `scoreText` (full normalisation) reads both sides alike.

export const AGENT_SENTENCES: readonly string[] = [
  'Thank you for calling Northwind Energy, my name is Sarah, how can I help you today?',
  'Your account balance is $142.75 and the payment is due on March 3rd.',
  'I can see that your order number 48213 shipped yesterday afternoon.',
  'The technician will arrive between 9 and 11 in the morning on Tuesday.',
  'Please say or enter the last four digits of your account number.',
  'Your appointment with Doctor Patel is confirmed for Friday, June 14th at 2:30 in the afternoon.',
  "I'm sorry, I didn't catch that. Could you repeat your date of birth?",
  'We have received your refund request for 89 dollars, and it should appear within 5 business days.',
  'Your current plan includes 20 gigabytes of data per month.',
  'To speak with a representative, press 0 at any time.',
  'Your flight to Chicago departs at 7:45 tomorrow morning from gate 12.',
  'I have updated your mailing address to 221 Maple Street, apartment 4.',
  'The total for your three items comes to $56.20 including tax.',
  'Can you please confirm the email address we have on file?',
  'Your reservation for a party of 6 is booked for Saturday at 8 in the evening.',
  'Our office hours are Monday through Friday from 8 until 6.',
  'I understand your frustration, and I will do my best to resolve this today.',
  'The estimated wait time is approximately 4 minutes.',
  'Your prescription will be ready for pickup after 3 this afternoon.',
  "I've scheduled a callback for you on Wednesday, October 22nd.",
  'Your claim reference is 75391, please keep it for your records.',
  'Michael from billing will call you back within 24 hours.',
  'We noticed an unusual charge of $300 on your card ending in 4417.',
  'Would you like to hear about our new savings account with a 4% interest rate?',
  'Your package was delivered to the front porch at 3:15 this afternoon.',
  'Please hold while I transfer you to the technical support team.',
  'The outage in your area should be resolved by 6 tonight.',
  'Your subscription renews on the 1st of every month for $12.99.',
  'I can offer you a credit of 25 dollars on your next bill.',
  'Is there anything else I can help you with today?',
  'Emily Johnson has been added as an authorized user on the account.',
  'Your loan application is under review, and we expect a decision by January 9th.',
  'For security purposes, this call may be recorded.',
  'The nearest store is located at 1500 Lincoln Avenue and closes at 9.',
  'Your internet speed test shows 150 megabits per second.',
  'We will send a replacement device by express shipping at no extra cost.',
  'Could you spell your last name for me, please?',
  'The balance on your gift card is $18.40.',
  'Your next dental cleaning is due in 6 months, around the end of April.',
  'I have cancelled the duplicate order, and you will not be charged twice.',
  'Your temporary password has been sent by text message to your phone.',
  'Check in time is 3 in the afternoon, and check out is at 11 in the morning.',
  'Thank you, Mr. Garcia, your payment of $250 has been processed.',
  'Please have your policy number and the date of the incident ready.',
  'Your water bill for September was 38 percent higher than last year.',
  'The delivery driver, James, is about 10 minutes away.',
  'We are open on Christmas Eve until 2 in the afternoon.',
  'Your car is due for an oil change at 45,000 miles.',
  "I'd be happy to set up automatic payments for the 15th of each month.",
  'Thank you for your patience, and have a wonderful evening.',
];

/** A one-sentence greeting for time-to-first-audio. */
export const GREETING = 'Thank you for calling, how can I help you today?';

/** A three-sentence paragraph for real-time factor. */
export const PARAGRAPH =
  'Thanks for waiting, I have pulled up your account. Your last payment of $64.30 was received on May 2nd, ' +
  'and your next bill will be issued on the 28th. Is there anything else I can help you with today?';
