"""A bilingual memory benchmark of our own: the same ten days of conversations in English and in
Chinese, and the same questions, each with the turn that answers it (its evidence).

Why our own: the public long-conversation sets are English only, and a fair comparison needs the
same content in both languages. Everything is generated from the templates below with a fixed
seed, so the set is reproducible and carries no licence beyond this project's. Fifteen people
talk about what they did (day by day: where they went, with whom, what they bought, learned,
watched), about themselves (job, pet, favourite food, home town) and chat in between; several
people do similar things, so a question has to find the right person and day. Questions ask
about places, companions, names, and days, both absolute ("on May 4") and relative ("the day
before yesterday", "last Wednesday") to the time they are asked. Beside them, a small set written
by hand (PARAPHRASE_LINES): questions that ask in other words than their answer's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

PEOPLE = [
    ("Li Wei", "李伟"),
    ("Wang Fang", "王芳"),
    ("Zhang Min", "张敏"),
    ("Liu Yang", "刘洋"),
    ("Chen Jing", "陈静"),
    ("Yang Lei", "杨磊"),
    ("Zhao Li", "赵丽"),
    ("Huang Qiang", "黄强"),
    ("Zhou Jie", "周杰"),
    ("Wu Na", "吴娜"),
    ("Xu Ming", "徐明"),
    ("Sun Yue", "孙悦"),
    ("Ma Chao", "马超"),
    ("Zhu Ting", "朱婷"),
    ("Hu Bin", "胡斌"),
]
CITIES = [
    ("Beijing", "北京"),
    ("Shanghai", "上海"),
    ("Hangzhou", "杭州"),
    ("Chengdu", "成都"),
    ("Xi'an", "西安"),
    ("Guangzhou", "广州"),
    ("Shenzhen", "深圳"),
    ("Nanjing", "南京"),
    ("Wuhan", "武汉"),
    ("Suzhou", "苏州"),
    ("Qingdao", "青岛"),
    ("Xiamen", "厦门"),
]
SPOTS = [
    ("Yellow Mountain", "黄山"),
    ("West Lake", "西湖"),
    ("the Great Wall", "长城"),
    ("Mount Tai", "泰山"),
    ("the Summer Palace", "颐和园"),
    ("Zhongshan Park", "中山公园"),
    ("the Bund", "外滩"),
    ("Lotus Hill", "莲花山"),
]
JOBS = [
    ("a nurse", "护士"),
    ("a teacher", "老师"),
    ("a software engineer", "软件工程师"),
    ("an accountant", "会计"),
    ("a chef", "厨师"),
    ("a lawyer", "律师"),
    ("a doctor", "医生"),
    ("a photographer", "摄影师"),
    ("a bus driver", "公交车司机"),
    ("an architect", "建筑师"),
]
PETS = [("cat", "猫"), ("dog", "狗"), ("rabbit", "兔子"), ("parrot", "鹦鹉")]
PET_NAMES = [
    ("Mimi", "咪咪"),
    ("Doudou", "豆豆"),
    ("Huahua", "花花"),
    ("Niuniu", "妞妞"),
    ("Qiuqiu", "球球"),
    ("Tiantian", "甜甜"),
]
FOODS = [
    ("hot pot", "火锅"),
    ("dumplings", "饺子"),
    ("Peking duck", "北京烤鸭"),
    ("noodles", "面条"),
    ("mapo tofu", "麻婆豆腐"),
    ("steamed buns", "包子"),
    ("sweet and sour pork", "糖醋里脊"),
]
THINGS = [
    ("a new bicycle", "一辆新自行车"),
    ("a pair of running shoes", "一双跑鞋"),
    ("a laptop", "一台笔记本电脑"),
    ("a camera", "一台相机"),
    ("a guitar", "一把吉他"),
    ("a winter coat", "一件冬季外套"),
]
SKILLS = [
    ("the piano", "钢琴"),
    ("swimming", "游泳"),
    ("Japanese", "日语"),
    ("painting", "画画"),
    ("yoga", "瑜伽"),
    ("chess", "象棋"),
]
MOVIES = [
    ("The Wandering Earth", "流浪地球"),
    ("Hi, Mom", "你好，李焕英"),
    ("Dying to Survive", "我不是药神"),
    ("Ne Zha", "哪吒"),
]
FILLER = [
    ("That sounds great!", "听起来真不错！"),
    ("Haha, really?", "哈哈，真的吗？"),
    ("How was the weather?", "天气怎么样？"),
    ("I'm so tired today.", "我今天好累。"),
    ("Let's meet up soon.", "我们找时间见面吧。"),
    ("Did you eat yet?", "你吃饭了吗？"),
    ("Work has been busy lately.", "最近工作很忙。"),
    ("Good night, talk tomorrow.", "晚安，明天聊。"),
    ("Me too, I agree.", "我也是，同意。"),
    ("Send me some photos!", "发几张照片给我看看！"),
]
WEEKDAYS_EN = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
WEEKDAYS_ZH = ["一", "二", "三", "四", "五", "六", "日"]
START = datetime(2023, 5, 1, 20, 0)  # a Monday; the ten days run to May 10


@dataclass
class Turn:
    turn_id: str
    speaker: tuple[str, str]
    when: datetime
    text: dict  # language -> text


@dataclass
class Question:
    qid: str
    kind: str
    asked_at: datetime
    text: dict  # language -> text
    evidence: list[str] = field(default_factory=list)


def _md(d: datetime) -> tuple[str, str]:
    return f"May {d.day}", f"{d.month}月{d.day}日"


def build(seed: int = 7) -> tuple[list[Turn], list[Question]]:
    rnd = random.Random(seed)
    turns: list[Turn] = []
    questions: list[Question] = []
    n = 0

    def say(person, when, en, zh) -> str:
        nonlocal n
        n += 1
        tid = f"T{n:04d}"
        turns.append(Turn(tid, person, when, {"en": f"{person[0]}: {en}", "zh": f"{person[1]}：{zh}"}))
        return tid

    def ask(kind, asked_at, en, zh, evidence):
        questions.append(Question("", kind, asked_at, {"en": en, "zh": zh}, [evidence]))

    profiles = {}
    for i, person in enumerate(PEOPLE):
        profiles[person] = {
            "job": JOBS[i % len(JOBS)],
            "home": CITIES[(i * 5) % len(CITIES)],
            "pet": PETS[i % len(PETS)],
            "pet_name": PET_NAMES[(i * 7) % len(PET_NAMES)],
            "food": FOODS[(i * 3) % len(FOODS)],
        }
    for day in range(10):
        today = START + timedelta(days=day)
        for person in PEOPLE:
            p = profiles[person]
            friend = rnd.choice([q for q in PEOPLE if q != person])
            r = rnd.random()
            when = today + timedelta(minutes=rnd.randint(0, 90))
            if day == 0:
                tid = say(person, when, f"By the way, I work as {p['job'][0]}.", f"顺便说一下，我是一名{p['job'][1]}。")
                ask(
                    "fact",
                    START + timedelta(days=9, hours=3),
                    f"What does {person[0]} do for a living?",
                    f"{person[1]}是做什么工作的？",
                    tid,
                )
            elif day == 1:
                pet, name = p["pet"], p["pet_name"]
                tid = say(
                    person,
                    when,
                    f"My {pet[0]} {name[0]} knocked over a cup again.",
                    f"我的{pet[1]}{name[1]}又把杯子打翻了。",
                )
                ask(
                    "fact",
                    START + timedelta(days=9, hours=3),
                    f"What is the name of {person[0]}'s {pet[0]}?",
                    f"{person[1]}的{pet[1]}叫什么名字？",
                    tid,
                )
            elif day == 2:
                tid = say(person, when, f"I grew up in {p['home'][0]}.", f"我是在{p['home'][1]}长大的。")
                ask(
                    "fact",
                    START + timedelta(days=9, hours=3),
                    f"Where did {person[0]} grow up?",
                    f"{person[1]}是在哪里长大的？",
                    tid,
                )
            elif r < 0.25:
                spot = rnd.choice(SPOTS)
                en_day, zh_day = _md(today)
                tid = say(
                    person,
                    when,
                    f"Today I went hiking at {spot[0]} with {friend[0]}.",
                    f"今天我和{friend[1]}去{spot[1]}爬山了。",
                )
                if day >= 4 and rnd.random() < 0.8:
                    ask(
                        "date",
                        START + timedelta(days=9, hours=3),
                        f"What did {person[0]} do on {en_day}?",
                        f"{person[1]}{zh_day}做了什么？",
                        tid,
                    )
                else:
                    ask(
                        "place",
                        START + timedelta(days=9, hours=3),
                        f"Where did {person[0]} go hiking with {friend[0]}?",
                        f"{person[1]}和{friend[1]}去哪里爬山了？",
                        tid,
                    )
            elif r < 0.45:
                thing = rnd.choice(THINGS)
                tid = say(person, when, f"I finally bought {thing[0]}!", f"我终于买了{thing[1]}！")
                asked = today + timedelta(days=2, hours=2)
                if asked <= START + timedelta(days=12):
                    ask(
                        "relative",
                        asked,
                        f"What did {person[0]} buy the day before yesterday?",
                        f"{person[1]}前天买了什么？",
                        tid,
                    )
            elif r < 0.6:
                skill = rnd.choice(SKILLS)
                tid = say(
                    person,
                    when,
                    f"I started learning {skill[0]} this week, it is harder than I thought.",
                    f"我这周开始学{skill[1]}了，比我想的难。",
                )
                ask(
                    "activity",
                    START + timedelta(days=9, hours=3),
                    f"What did {person[0]} start learning?",
                    f"{person[1]}开始学什么了？",
                    tid,
                )
            elif r < 0.72:
                movie = rnd.choice(MOVIES)
                weekday = today.weekday()
                tid = say(
                    person,
                    when,
                    f"I watched {movie[0]} at the cinema with {friend[0]}.",
                    f"我和{friend[1]}去电影院看了《{movie[1]}》。",
                )
                asked = today + timedelta(days=7 - weekday + rnd.randint(0, 2), hours=1)
                if asked <= START + timedelta(days=14):
                    ask(
                        "relative",
                        asked,
                        f"Which movie did {person[0]} watch last {WEEKDAYS_EN[weekday]}?",
                        f"{person[1]}上周{WEEKDAYS_ZH[weekday]}看了哪部电影？",
                        tid,
                    )
            elif r < 0.82:
                city = rnd.choice([c for c in CITIES if c != p["home"]])
                tid = say(
                    person,
                    when,
                    f"I took the high-speed train to {city[0]} to visit my grandmother.",
                    f"我坐高铁去{city[1]}看望奶奶了。",
                )
                ask(
                    "place",
                    START + timedelta(days=9, hours=3),
                    f"Which city did {person[0]} go to to see a grandmother?",
                    f"{person[1]}去哪个城市看望奶奶了？",
                    tid,
                )
            elif r < 0.9:
                tid = say(
                    person,
                    when,
                    f"Had {p['food'][0]} for dinner with {friend[0]}, my favourite!",
                    f"晚饭和{friend[1]}吃了{p['food'][1]}，我最喜欢吃这个了！",
                )
                if rnd.random() < 0.5:
                    ask(
                        "fact",
                        START + timedelta(days=9, hours=3),
                        f"What is {person[0]}'s favourite food?",
                        f"{person[1]}最喜欢吃什么？",
                        tid,
                    )
            for k in range(2):
                filler = rnd.choice(FILLER)
                say(person, when + timedelta(minutes=3 + k), filler[0], filler[1])
    # A fixed mix of question kinds, drawn from all the candidates.
    quota = {"fact": 25, "place": 20, "date": 20, "relative": 25, "activity": 10}
    chosen: list[Question] = []
    for kind, k in quota.items():
        pool = [q for q in questions if q.kind == kind]
        chosen += rnd.sample(pool, min(k, len(pool)))
    for i, q in enumerate(chosen, 1):
        q.qid = f"Q{i:03d}"
    return turns, chosen


# Paraphrases: eight people's lines and questions that ask about them in other words, most sharing
# no content word with their answer ("林雪养宠物吗?" for "I adopted a kitten from the animal
# shelter"). Written by hand, unlike the templates above, to measure recall by meaning rather than
# by shared words; bench/bilingual.py retains them beside the turns above (distractors) and
# reports recall@1/3/10. Each line is (English name, Chinese name, English, Chinese); each
# question (its line's index, English, Chinese).
PARAPHRASE_LINES = [
    ("Chen Hao", "陈浩", "I just got promoted to head of the sales department.", "我刚升职当了销售部经理。"),
    ("Chen Hao", "陈浩", "My wife is expecting our second child in October.", "我老婆十月份要生二胎了。"),
    ("Chen Hao", "陈浩", "I sprained my ankle playing basketball on Saturday.", "我周六打篮球的时候把脚踝扭伤了。"),
    (
        "Chen Hao",
        "陈浩",
        "We are thinking about selling the car and buying an electric one.",
        "我们在考虑把车卖了，换一辆电动车。",
    ),
    ("Chen Hao", "陈浩", "The weather is nice today.", "今天天气不错。"),
    ("Lin Xue", "林雪", "I adopted a kitten from the animal shelter last week.", "我上周从动物收容所领养了一只小猫。"),
    ("Lin Xue", "林雪", "My thesis defense is scheduled for next Thursday.", "我的论文答辩安排在下周四。"),
    ("Lin Xue", "林雪", "I have been learning to bake bread on weekends.", "我周末一直在学做面包。"),
    ("Lin Xue", "林雪", "My parents are flying in from Harbin to visit me.", "我爸妈要从哈尔滨坐飞机来看我。"),
    ("Lin Xue", "林雪", "Haha, that is so funny.", "哈哈，太好笑了。"),
    (
        "Guo Peng",
        "郭鹏",
        "I quit smoking three months ago and feel much healthier.",
        "我三个月前戒烟了，感觉身体好多了。",
    ),
    ("Guo Peng", "郭鹏", "My daughter won first prize in the piano competition.", "我女儿在钢琴比赛中得了一等奖。"),
    ("Guo Peng", "郭鹏", "I am renovating the kitchen, it is a total mess.", "我家厨房正在装修，乱得一塌糊涂。"),
    ("Guo Peng", "郭鹏", "I lost my wallet on the subway yesterday.", "我昨天在地铁上把钱包弄丢了。"),
    ("Guo Peng", "郭鹏", "See you tomorrow.", "明天见。"),
    ("Song Jia", "宋佳", "I am allergic to peanuts, so I never eat satay.", "我对花生过敏，所以从来不吃沙爹。"),
    (
        "Song Jia",
        "宋佳",
        "I started running every morning to prepare for a marathon.",
        "我每天早上开始跑步，为马拉松做准备。",
    ),
    (
        "Song Jia",
        "宋佳",
        "My grandfather was a fisherman in a small village by the sea.",
        "我爷爷以前是海边一个小渔村的渔民。",
    ),
    (
        "Song Jia",
        "宋佳",
        "I am reading a novel about the history of the Silk Road.",
        "我在看一本关于丝绸之路历史的小说。",
    ),
    ("Song Jia", "宋佳", "I'm so sleepy.", "我好困啊。"),
    ("Deng Kai", "邓凯", "I moved to a new apartment near the river.", "我搬到了河边的一套新公寓。"),
    ("Deng Kai", "邓凯", "My doctor told me my blood pressure is too high.", "医生说我的血压太高了。"),
    ("Deng Kai", "邓凯", "I teach math at a middle school.", "我在一所中学教数学。"),
    ("Deng Kai", "邓凯", "I bought tickets for a concert in December.", "我买了十二月一场音乐会的票。"),
    ("Deng Kai", "邓凯", "Let's have dinner sometime.", "改天一起吃饭吧。"),
    ("Xie Lan", "谢兰", "I broke up with my boyfriend after five years.", "我和男朋友谈了五年，还是分手了。"),
    ("Xie Lan", "谢兰", "I am saving money to study abroad in Germany.", "我在攒钱准备去德国留学。"),
    ("Xie Lan", "谢兰", "My phone screen cracked when I dropped it.", "我手机掉地上，屏幕摔碎了。"),
    ("Xie Lan", "谢兰", "I volunteer at a library on Sundays.", "我每个星期天在图书馆做志愿者。"),
    ("Xie Lan", "谢兰", "Sounds good to me.", "我觉得挺好的。"),
    ("Fang Tao", "方涛", "I caught a cold and have a fever.", "我感冒了，还发烧。"),
    ("Fang Tao", "方涛", "Our company is moving its office to Shenzhen.", "我们公司要把办公室搬到深圳。"),
    ("Fang Tao", "方涛", "I planted tomatoes and cucumbers on my balcony.", "我在阳台上种了西红柿和黄瓜。"),
    ("Fang Tao", "方涛", "My son is learning to swim this summer.", "我儿子今年夏天在学游泳。"),
    ("Fang Tao", "方涛", "Really? I didn't know that.", "真的吗？我都不知道。"),
    ("He Min", "何敏", "I got my driving license on the first try.", "我驾照一次就考过了。"),
    ("He Min", "何敏", "My brother is getting married in spring.", "我哥哥春天要结婚了。"),
    ("He Min", "何敏", "I work night shifts at the hospital as a nurse.", "我在医院当护士，上夜班。"),
    ("He Min", "何敏", "I dyed my hair red for the first time.", "我第一次把头发染成了红色。"),
    ("He Min", "何敏", "Good night everyone.", "大家晚安。"),
]
PARAPHRASE_QUESTIONS = [
    (0, "What new position did Chen Hao get at work?", "陈浩在公司得到了什么新职位？"),
    (1, "Is Chen Hao's family going to grow?", "陈浩家里要添孩子了吗？"),
    (2, "How did Chen Hao get injured?", "陈浩是怎么受伤的？"),
    (3, "What kind of vehicle does Chen Hao want next?", "陈浩下一辆想买什么样的汽车？"),
    (5, "Does Lin Xue have a pet?", "林雪养宠物吗？"),
    (6, "When does Lin Xue have to present her research?", "林雪什么时候要汇报她的研究？"),
    (7, "What hobby does Lin Xue have in her free time?", "林雪空闲时间有什么爱好？"),
    (8, "Who is coming to see Lin Xue?", "谁要来探望林雪？"),
    (10, "What unhealthy habit did Guo Peng give up?", "郭鹏戒掉了什么坏习惯？"),
    (11, "What did Guo Peng's child achieve in music?", "郭鹏的孩子在音乐方面取得了什么成绩？"),
    (12, "Which room of Guo Peng's home is being redone?", "郭鹏家哪个房间在翻新？"),
    (13, "What did Guo Peng misplace on public transport?", "郭鹏在公共交通上丢了什么东西？"),
    (15, "What food must Song Jia avoid?", "宋佳不能吃什么食物？"),
    (16, "What race is Song Jia training for?", "宋佳在为什么比赛训练？"),
    (17, "What did Song Jia's grandpa do for a living?", "宋佳的祖父是做什么的？"),
    (18, "What book is Song Jia reading?", "宋佳最近在读什么书？"),
    (20, "Where does Deng Kai live now?", "邓凯现在住在哪里？"),
    (21, "What health problem does Deng Kai have?", "邓凯有什么健康问题？"),
    (22, "What is Deng Kai's profession?", "邓凯的职业是什么？"),
    (23, "What event will Deng Kai attend at the end of the year?", "邓凯年底要去参加什么活动？"),
    (25, "Is Xie Lan still in a relationship?", "谢兰还在谈恋爱吗？"),
    (26, "Where does Xie Lan plan to go to university?", "谢兰打算去哪个国家读大学？"),
    (27, "What happened to Xie Lan's mobile?", "谢兰的手机怎么了？"),
    (28, "What does Xie Lan do on weekends to help others?", "谢兰周末做什么公益活动？"),
    (30, "Is Fang Tao sick?", "方涛生病了吗？"),
    (31, "Where is Fang Tao's employer relocating?", "方涛的单位要迁到哪座城市？"),
    (32, "What vegetables is Fang Tao growing?", "方涛种了什么蔬菜？"),
    (33, "What sport is Fang Tao's kid picking up?", "方涛的孩子在学什么运动？"),
    (35, "Did He Min pass her driving test?", "何敏的驾驶考试通过了吗？"),
    (36, "Whose wedding is coming up for He Min?", "何敏家里谁要办婚礼？"),
    (37, "What is He Min's job?", "何敏是干什么工作的？"),
    (38, "What did He Min change about her appearance?", "何敏的外表有什么变化？"),
]


def paraphrases() -> tuple[list[Turn], list[Question]]:
    """The paraphrase lines as turns (said on the fourth day, turn ids P00-P39) and their
    questions (asked on the tenth)."""
    turns = [
        Turn(
            f"P{i:02d}",
            (en_name, zh_name),
            START + timedelta(days=3, minutes=i),
            {"en": f"{en_name}: {en}", "zh": f"{zh_name}：{zh}"},
        )
        for i, (en_name, zh_name, en, zh) in enumerate(PARAPHRASE_LINES)
    ]
    asked = START + timedelta(days=9, hours=3)
    questions = [
        Question(f"P{n:02d}", "paraphrase", asked, {"en": en, "zh": zh}, [f"P{i:02d}"])
        for n, (i, en, zh) in enumerate(PARAPHRASE_QUESTIONS)
    ]
    return turns, questions
