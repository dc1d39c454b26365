// Names from the names lists (names-list.ts) that are also ordinary English words ("will", "may", "bill", "mark",
// "grace", "summer"). Computed once as the intersection of the first-name list with the lower-case entries of
// SCOWL's american-english word list (Debian package wamerican, a permissive licence), plus the month names in the
// list, less a few whose word sense is rare in conversation (john, mike, peter, harry, tom, tony, nick, …).
// Such a word counts as a name only with strong context (see names.ts).

export const COMMON_WORD_NAMES: ReadonlySet<string> = new Set(
  (
    'abbey abbot ace ad ado adore agape albino aline alley ally amaryllis amber amble amity amour anal angel any ' +
    'april aquiline arcade arch archer art arty ascension ash astride august aura autumn ax axe baby bail bald bale ' +
    'ban bank bar barb bard barn baron base basil bat bay bear beau beck bee bell belle bent beret berry biddy bill ' +
    'birch bird birdie blanch blaze bliss blithe boas bob bogey bond bone bonito bonnie bonny boot booth boy brain ' +
    'bran brand brandy brew brewer bride brier brig briny brook brooks brown buck bud buddy bunny burg burr buster ' +
    'butch cad cal calypso cam camel camellia can candy caprice car care carmine carol carry cart carver case cash ' +
    'celesta cello chance chandler chariot charity chase chastity cherish cherry chic chick chip christen chuck ' +
    'cinnamon clay cliff cob colas collie colt con conception constancy constant cookie coop cooper coral cord corny ' +
    'court coy craggy cross crystal cull curry curt daffy dahlia daisy dale dame dare darn dawn dean deb deck dell ' +
    'delphinia delta den deny derby desiderata destiny dew diamond dick dies dieter dill dilly dock doe doll dolly ' +
    'don dory dot dotty drake drew dud duff duke dun dusty earl early earnest ebony ed elide else em emerald emery ' +
    'era ester eve even fair faith fan fancy fanny far faun fawn fax fedora fee felicity feline fem fender fern fey ' +
    'fidelity field fielding fields filbert fin fine flint flip floor flora ford forest forester foster frank free ' +
    'freedman freeman gabby gage gal gale gardener garland garner garnet garret garrison gates gay general genesis ' +
    'gentile gill ginger gipsy glad glen glory golden goober grace gram grange grannie granny grant gray green ' +
    'griffin grove gun gunner guru gust gusty guy gypsy had hale hall ham hank happy hardy harmony harp hart hasty ' +
    'haven haze hazel heath heather heaven herb hew hi hill hillier hilly hogan holly homer honey honor hope hunt ' +
    'hunter hyacinth idea innocent iris itch ivory ivy jack jade jarred jasmine jasper jay jazz jessamine jet jewel ' +
    'job jock joy judge julienne june junior justice kale keen kick kin king kipper kit kitty la lacy lance land lane ' +
    'lark laurel law lay lea lean lee lefty levy lib lief lien lily line link linnet lion lira lisle lock lorry lot ' +
    'loyal lucky lyric mace mads magnolia magnum major man mar mare margarita marigold marina marine mark marlin ' +
    'marquis marquise marsh marshal mart marten martial mas mason mats mattes maverick max maxim maxima may mayor ' +
    'mead meg melody mercy merrily merry meta mickey midge mil mile miles mill miller min miner mink minor miracle ' +
    'misty modest modesty moll mommy moos moss muffin my myrtle nadir name nanny nap nappy natal natty naval nettle ' +
    'nil nine noble north nova novella octave ode olive opal oral ova pace paddy page pail pall palm pansy parfait ' +
    'park parry pat pate patience patsy patty pearl peer peg pen penny pet petunia pie pier pierce piggy pink pinkie ' +
    'pip piper pit pooh poppy port porter precious price prince princess prosper prudence puck puff quarto queen ' +
    'quill rabbi ram randy ransom raven ray read red reed rein rice rich riff ring rip river roan rob robin rock ' +
    'rocky rod roger rogers romaine roman rose rosemary rosette rosy rover row royal rube ruby ruddy rusty sage said ' +
    'salmon salvo sander sanders sandy sapphire saree sari savanna savannah saw sawyer sax say scarlet see senna ' +
    'serene serenity serge sergeant shad shade shadow shandy sharia shell shepherd sherry sierra silvan sim sincere ' +
    'sissy sister skip skipper sky sly smith sol son sonny spike star sterling stern steward stone storm stormy sue ' +
    'sully summer sunny sunshine swami sylvan tab tabby tad taffy tailor tally talon tam tan tanner tansy tea temp ' +
    'temple thatch thatcher thorn thorny tiara ties tiff till tine toddy toke tome tore town toy trace trinity trip ' +
    'troy tuck tucker turner unique urban vale valentine van velvet verge vesper vi victor viola violet vital viva ' +
    'wade wait waiter wake wale walker ward warden ware warren wash way web welch wellington wells welsh west wheeler ' +
    'whit will willow wilt win windy wit witty wolf wood woodman woody worth worthy wren wright yank yard yule zed'
  ).split(' '),
);
